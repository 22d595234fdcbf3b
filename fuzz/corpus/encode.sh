#!/usr/bin/env bash
# Encodes the text-format seeds into the binary messages the harnesses read:
# report/*.textproto -> report/*.bin (v1::AuditResults), observation/*.textproto
# -> observation/*.bin (one kind byte, the file name's leading digit, then a
# v1::Observation; the digit is the kind's place in spec.proto's `oneof kind`:
# 0 membership, 1 exposure, 2 forgetting, 3 unlearning, 4 relational, 5 dp_audit).
# scoring/*.bin need no encoding: big-endian doubles, the values of a
# complete audit in scoring_fuzzer.cc's order (phi, loss, population loss per model).
# export/*.pb need none either: per-example archives as `memaudit run` writes
# them (length-delimited v1::ExportArray pieces, common/messages/export_arrays.h).
set -euo pipefail
cd "$(dirname "$0")"
proto=../../proto
for f in report/*.textproto; do
  protoc -I "$proto" --encode=memaudit.v1.AuditResults memaudit/v1/results.proto <"$f" >"${f%.textproto}.bin"
done
for f in observation/*.textproto; do
  kind=$(basename "$f" | cut -c1)
  { printf "\\x0$kind"
    protoc -I "$proto" --encode=memaudit.v1.Observation memaudit/v1/scorer.proto <"$f"; } >"${f%.textproto}.bin"
done
