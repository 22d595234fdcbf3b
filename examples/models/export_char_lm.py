#!/usr/bin/env python3
"""Exports a character GRU or LSTM as TorchScript for memaudit's language-model
audits (exposure, forgetting with canaries, relational phone_book) with
`model: {architecture: torchscript, torchscript_path: OUT.pt}`.

The module follows memaudit's contract (docs/language-models.md):
  forward(tokens: int64 [B, T]) -> float logits [B, T, V], causal;
  vocabulary: str, the V symbols in id order, the first U+FFFD (unknown).

With --tokens V the model reads the ids of a SentencePiece tokenizer that
the audit names (model.tokenizer.model_path): V is that model's pieces plus
one (memaudit's newline token), and `vocabulary` is left empty (not read).

Usage (Debian's python3-torch, hence /usr/bin/python3):
  /usr/bin/python3 examples/models/export_char_lm.py OUT.pt \\
      --vocabulary-from corpus.txt --extra-chars 'the random number is ' \\
      [--cell gru|lstm] [--layers 1] [--units 128] [--embedding 32] \\
      [--dropout 0.0] [--seed 0] [--tokens V]

The vocabulary is every character of --vocabulary-from (a UTF-8 file, or
every regular file under a folder, fortune's *.dat indexes skipped, as the
audits read a corpus) plus --extra-chars plus the digits and newline, sorted
by code point after U+FFFD: for the same text the ids equal memaudit's
built-in vocabulary. Corpus characters outside it become the unknown symbol;
a canary character outside it fails the audit. The weights are a function of
the flags and --seed only.
"""
import argparse
import os
import sys

import torch

UNKNOWN = "\ufffd"


class CharLm(torch.nn.Module):
    vocabulary: str

    def __init__(self, vocabulary: str, size: int, cell: str, layers: int, units: int,
                 embedding: int, dropout: float):
        super().__init__()
        self.vocabulary = vocabulary
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.embed = torch.nn.Embedding(size, embedding)
        self.rnn = rnn(embedding, units, num_layers=layers, batch_first=True,
                       dropout=dropout if layers > 1 else 0.0)
        self.drop = torch.nn.Dropout(dropout)
        self.head = torch.nn.Linear(units, size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # From the zero state, left to right: logits at t see tokens[:, :t+1] only.
        out, _ = self.rnn(self.drop(self.embed(tokens)))
        return self.head(self.drop(out))


def read_text(path: str) -> str:
    if os.path.isdir(path):
        files = []
        for root, _, names in os.walk(path):
            for name in names:
                full = os.path.join(root, name)
                if os.path.islink(full) or not os.path.isfile(full) or name.endswith(".dat"):
                    continue
                files.append(full)
        return "".join(read_text(f) for f in sorted(files))
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def add_vocabulary_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vocabulary-from", default="", help="UTF-8 file or folder")
    parser.add_argument("--extra-chars", default="", help="characters to add (canary prefix ...)")
    parser.add_argument("--tokens", type=int, default=0,
                        help="ids of a SentencePiece tokenizer: its pieces + 1")


def vocabulary_of(args: argparse.Namespace) -> "tuple[str, int]":
    """The module's vocabulary and size: empty and --tokens for a tokenizer's ids,
    else U+FFFD then the sorted characters of the corpus, extras, digits, newline."""
    if args.tokens > 0:
        return "", args.tokens
    text = read_text(args.vocabulary_from) if args.vocabulary_from else ""
    chars = set(text + args.extra_chars + "0123456789\n")
    chars.discard(UNKNOWN)
    vocabulary = UNKNOWN + "".join(sorted(chars))
    return vocabulary, len(vocabulary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    add_vocabulary_arguments(parser)
    parser.add_argument("--cell", choices=("gru", "lstm"), default="gru")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--embedding", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    vocabulary, size = vocabulary_of(args)
    torch.manual_seed(args.seed)
    model = CharLm(vocabulary, size, args.cell, args.layers, args.units, args.embedding,
                   args.dropout)
    torch.jit.script(model).save(args.out)
    print(f"{args.out}: {args.cell} {args.layers}x{args.units}, {size} symbols")
    return 0


if __name__ == "__main__":
    sys.exit(main())
