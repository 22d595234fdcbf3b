#!/usr/bin/env bash
# Runs memaudit the way a cluster does, on this machine, with Podman: builds the
# runtime image from the host build (build/bin), plays deploy/k8s/overlays/local
# (coordinator, scorer and two workers, each with its own certificate, in one
# pod), and checks that
#   1. the quickstart submitted to the pod gives the same numbers, bit for bit,
#      as `memaudit run` on the host;
#   2. an audit survives the scorer stopped for 60 s, the coordinator stopped
#      for 60 s, and worker-0 sent SIGTERM three times while it holds a task,
#      each without an attempt spent (no task_retried event, every task
#      succeeded at attempt 1);
#   3. the GPU bundle (scripts/gpu-bundle.sh) runs where none of the build's
#      packages are: in a container of the bare Debian base image, with only
#      the bundle, a LibTorch (the engine module's own libraries, standing in
#      for a GPU machine's PyTorch) and the data mounted, `memaudit run`
#      finishes the quickstart with the host's numbers, bit for bit.
# Everything it writes is under build/containers/; the pod and its volumes are
# removed on exit (MEMAUDIT_CT_KEEP=1 keeps the volumes).
#
#   scripts/build.sh && scripts/container-test.sh
#
# MEMAUDIT_CT_PHASES   which checks to run (default "bundle quickstart scorer coordinator worker")
# MEMAUDIT_CT_OUTAGE_S how long the scorer and the coordinator stay stopped (default 60)
# MEMAUDIT_CT_NO_CACHE=1 builds the image without Podman's layer cache (a cold build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
state=build/containers
phases="${MEMAUDIT_CT_PHASES:-bundle quickstart scorer coordinator worker}"
outage_s="${MEMAUDIT_CT_OUTAGE_S:-60}"
max_image_bytes=1500000000
base_image=localhost/memaudit-base:bookworm
version=$(sed -n 's/^project(memaudit VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
image=localhost/memaudit:$version
pod=memaudit-pod-0
# The four programs and the modules memaudit-worker loads (the engine, and
# SentencePiece for subword tokenizers).
binaries=(memaudit memaudit-coordinator memaudit-scorer memaudit-worker libmemaudit_engine.so
  libmemaudit_sentencepiece.so)
t_start=$SECONDS
summary=()
failed=0

log() { printf '[%4ds] %s\n' $((SECONDS - t_start)) "$*"; }
die() { log "FAIL: $*"; exit 1; }
record() {  # NAME PASS|FAIL SECONDS DETAIL
  summary+=("$(printf '%-12s %-4s %5ss  %s' "$1" "$2" "$3" "$4")")
  [ "$2" = PASS ] || failed=1
}

for b in "${binaries[@]}"; do
  [ -f "build/bin/$b" ] || die "build/bin/$b missing: run scripts/build.sh first"
done
scripts/install-deps.sh >/dev/null
for c in podman debootstrap kubectl objcopy openssl /usr/bin/python3; do
  command -v "$c" >/dev/null || die "$c not found (kubectl: one with kustomize, as DeployManifestsTest uses)"
done
mkdir -p "$state"/{bin,results,logs,specs}

# --- Podman's settings, written here rather than in /etc ---------------------
# runc (the OCI runtime scripts/install-deps.sh installs, named so that no
# other one is picked), default ulimits within this machine's hard limits
# (Podman's defaults exceed a sandbox's, and runc then fails with "error
# setting rlimit type 7: operation not permitted"), cgroupfs and a file event
# log (no systemd or journald needed). Storage stays Podman's default: the
# overlay driver on the kernel's overlayfs.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=20000; [ "$nofile" -gt 20000 ] && nofile=20000
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] && nproc=4096; [ "$nproc" -gt 4096 ] && nproc=4096
cat >"$state/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF="$root/$state/containers.conf"
podman info >/dev/null || die "podman info failed (settings: $CONTAINERS_CONF)"
log "podman $(podman version --format '{{.Client.Version}}'), storage driver $(podman info --format '{{.Store.GraphDriverName}}'), settings $CONTAINERS_CONF"

# --- The Debian 12 base image (no registry: debootstrap from apt's mirror) ---
if podman image exists "$base_image"; then
  log "base image $base_image present"
else
  t=$SECONDS
  # The Debian sources apt uses here: "URI SUITE" for bookworm and its
  # updates and security suites.
  mapfile -t sources < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
                           'Created-By: Packages' | awk '$2 ~ /^bookworm(-updates|-security)?$/' | sort -u)
  mirror=$(printf '%s\n' "${sources[@]}" | awk '$2 == "bookworm" {print $1; exit}')
  mirror="${mirror:-http://deb.debian.org/debian/}"
  rootfs=$(mktemp -d /var/tmp/memaudit-rootfs.XXXXXX)
  log "debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$state/logs/debootstrap.log" 2>&1 \
    || { rm -rf "$rootfs"; die "debootstrap failed: $state/logs/debootstrap.log"; }
  if [ "${#sources[@]}" -gt 0 ]; then
    printf 'deb %s %s main\n' $(printf '%s\n' "${sources[@]}") >"$rootfs/etc/apt/sources.list"
  fi
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | podman import \
    --change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD=["/bin/bash"]' - "$base_image" >"$state/logs/base-import.log" 2>&1
  rm -rf "$rootfs"
  log "base image $base_image made in $((SECONDS - t)) s"
fi

# --- The runtime image from the host build ------------------------------------
# Debug info stripped (symbols kept): 255 MB of binaries become about 10 MB.
for b in "${binaries[@]}"; do objcopy --strip-debug "build/bin/$b" "$state/bin/$b"; done
cache=(); [ "${MEMAUDIT_CT_NO_CACHE:-0}" = 1 ] && cache=(--no-cache)
t=$SECONDS
podman build "${cache[@]}" -f docker/Dockerfile --target runtime-host \
  --build-context "hostbin=$state/bin" --build-arg "BASE_IMAGE=$base_image" \
  --build-arg "VERSION=$version" --build-arg "REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" \
  --build-arg "SOURCE=$(git remote get-url origin 2>/dev/null || true)" \
  -t "$image" . >"$state/logs/image-build.log" 2>&1 || die "image build failed: $state/logs/image-build.log"
build_s=$((SECONDS - t))
size=$(podman image inspect "$image" --format '{{.Size}}')
size_mb=$((size / 1000000))
log "image $image: ${size_mb} MB, built in ${build_s} s"
if [ "$size" -le "$max_image_bytes" ]; then
  record image PASS "$build_s" "$image ${size_mb} MB (limit 1500 MB)"
else
  record image FAIL "$build_s" "$image ${size_mb} MB exceeds 1500 MB"
fi

# --- 0. The GPU bundle in a bare Debian container --------------------------------
# Every number of a results JSON (ids and times aside), as IEEE doubles.
compare_results() {  # A.json B.json -> "N numbers, M differ"; exit 1 when any differs
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import json, struct, sys
IGNORED = ("audit_id", "id", "created", "updated", "time", "timestamp")
def numbers(v, path, out):
    if isinstance(v, dict):
        for k, x in v.items():
            if k in IGNORED or k.endswith(("_id", "_ms", "_unix_ms")):
                continue
            numbers(x, f"{path}.{k}", out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            numbers(x, f"{path}[{i}]", out)
    elif isinstance(v, bool):
        return
    elif isinstance(v, (int, float)):
        out[path] = struct.pack("<d", float(v)) if isinstance(v, float) else v
    elif isinstance(v, str):
        try:
            out[path] = int(v)  # 64-bit counts are strings in proto JSON
        except ValueError:
            pass
a, b = {}, {}
numbers(json.load(open(sys.argv[1])), "", a)
numbers(json.load(open(sys.argv[2])), "", b)
diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
print(f"{len(b)} numbers, {len(diff)} differ" + (": " + ", ".join(diff[:5]) if diff else ""))
sys.exit(1 if diff or not b else 0)
EOF
}
host_quickstart() {  # -> $state/results/quickstart-host.json, once per run of this script
  local t=$SECONDS
  [ -f "$state/results/quickstart-host.json" ] && return 0
  rm -rf "$state/host-run"
  build/bin/memaudit run examples/quickstart.yaml --dir "$state/host-run" \
    --json "$state/results/quickstart-host.json" >"$state/logs/host-run.log" 2>&1 \
    || die "memaudit run on the host failed: $state/logs/host-run.log"
  host_s=$((SECONDS - t))
  log "quickstart on the host: $host_s s"
}
rm -f "$state/results/quickstart-host.json"
host_s=0
if [[ " $phases " == *" bundle "* ]]; then
  t=$SECONDS
  scripts/gpu-bundle.sh "$state/gpu-bundle.tar.xz" >"$state/logs/gpu-bundle.log" 2>&1 \
    || die "scripts/gpu-bundle.sh failed: $state/logs/gpu-bundle.log"
  bundle_bytes=$(stat -c %s "$state/gpu-bundle.tar.xz")
  rm -rf "$state/bundle" "$state/torch-libs" "$state/bundle-out"
  mkdir -p "$state/bundle" "$state/torch-libs" "$state/bundle-out"
  tar -xJf "$state/gpu-bundle.tar.xz" -C "$state/bundle"
  bundle_root=$(echo "$state"/bundle/memaudit-*)
  # The engine module this machine built, and the libraries it loads that
  # neither the bundle nor the base image's C and C++ runtimes provide:
  # LibTorch and its own, as a PyTorch installation brings them.
  cp "$state/bin/libmemaudit_engine.so" "$bundle_root/lib/memaudit/"
  ldd build/bin/libmemaudit_engine.so | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r soname path; do
      [[ $soname =~ ^(ld-linux-x86-64|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so ]] && continue
      [ -e "$bundle_root/lib/$soname" ] || cp -L "$path" "$state/torch-libs/$soname"
    done
  chmod -R a+rX "$state/bundle" "$state/torch-libs"
  chmod a+rwx "$state/bundle-out"
  rc=0
  podman run --rm --network none -e LD_LIBRARY_PATH=/opt/torch/lib \
    -v "$root/$bundle_root:/opt/memaudit:ro" -v "$root/$state/torch-libs:/opt/torch/lib:ro" \
    -v /usr/share/datasets/fashion-mnist:/usr/share/datasets/fashion-mnist:ro \
    -v "$root/$state/bundle-out:/out" "$base_image" \
    /opt/memaudit/bin/memaudit run /opt/memaudit/src/examples/quickstart.yaml \
      --dir /tmp/run --json /out/quickstart-bundle.json >"$state/logs/bundle-run.log" 2>&1 || rc=$?
  bundle_s=$((SECONDS - t))
  host_quickstart
  if [ $rc -eq 0 ] && cmp=$(compare_results "$state/bundle-out/quickstart-bundle.json" \
                                            "$state/results/quickstart-host.json"); then
    verdict=PASS
  else
    verdict=FAIL
    [ $rc -eq 0 ] || cmp="memaudit run exited $rc in the container: $state/logs/bundle-run.log"
  fi
  record bundle "$verdict" "$bundle_s" "bundle $((bundle_bytes / 1024 / 1024)) MiB, quickstart in bare $base_image: $cmp"
  log "bundle: $verdict ($cmp)"
fi

# --- Certificates, keys and quotas, as the overlay's hostPath volumes expect --
# A certificate per worker (OU=worker, CN=worker-0 / worker-1), none shared.
workers=(worker-0 worker-1)
MEMAUDIT_WORKERS="${workers[*]}" scripts/make-certs.sh "$state/certs" >/dev/null
secrets="$state/secrets"
rm -rf "$secrets"
tls_secret() {  # CERTIFICATE (its name in $state/certs) DIRECTORY (under $secrets)
  mkdir -p "$secrets/$2"
  cp "$state/certs/$1.crt" "$secrets/$2/tls.crt"
  cp "$state/certs/$1.key" "$secrets/$2/tls.key"
  cp "$state/certs/ca.crt" "$secrets/$2/ca.crt"
}
tls_secret coordinator coordinator-tls
tls_secret scorer scorer-tls
for w in "${workers[@]}"; do tls_secret "$w" "$w-tls"; done
mkdir -p "$secrets/tokens" "$secrets/capability" "$secrets/quotas"
: >"$secrets/tokens/token-hashes"  # clients here use certificates, no tokens
cp "$state/certs/capability.key" "$secrets/capability/capability.key"
cp deploy/k8s/base/quotas.yaml "$secrets/quotas/quotas.yaml"  # base's shipped quotas
# As base's Secrets are mounted (defaultMode 0440) for the image's user.
chown -R 10001:10001 "$secrets"
find "$secrets" -type f -exec chmod 0440 {} +
find "$secrets" -mindepth 1 -type d -exec chmod 0550 {} +
cli_tls=(--tls-cert "$state/certs/team-demo.crt" --tls-key "$state/certs/team-demo.key"
         --tls-ca "$state/certs/ca.crt")
remote=(--coordinator 127.0.0.1:7400 "${cli_tls[@]}")

# --- Render and play the local overlay ----------------------------------------
manifest="$state/memaudit-local.yaml"
kubectl kustomize deploy/k8s/overlays/local >"$manifest"
grep -q "image: $image\$" "$manifest" || die "$manifest does not run $image (kustomization images: vs CMakeLists.txt version)"
volumes=(memaudit-coordinator-data memaudit-scorer-data)

dump_logs() {
  for c in scorer coordinator "${workers[@]}"; do
    podman logs "$pod-$c" >"$state/logs/$c.log" 2>&1 || true
  done
}
teardown() {
  local rc=$?
  set +e
  if podman pod exists "$pod" 2>/dev/null; then
    dump_logs
    podman kube down "$manifest" >/dev/null 2>&1 || podman pod rm -f "$pod" >/dev/null 2>&1
  fi
  [ "${MEMAUDIT_CT_KEEP:-0}" = 1 ] || podman volume rm -f "${volumes[@]}" >/dev/null 2>&1
  echo
  echo "== container test summary ($((SECONDS - t_start)) s; logs in $state/logs) =="
  printf '%s\n' "${summary[@]}"
  if [ "$failed" = 0 ] && [ "$rc" = 0 ]; then echo "PASS"; else echo "FAIL"; fi
  [ "$failed" = 0 ] || exit 1
  exit "$rc"
}
trap teardown EXIT

if podman pod exists "$pod"; then
  log "removing the pod a previous run left"
  podman kube down "$manifest" >/dev/null 2>&1 || podman pod rm -f "$pod" >/dev/null
fi
podman volume rm -f "${volumes[@]}" >/dev/null 2>&1 || true  # kube play refuses existing ones
for port in 7400 7401 9400 9401 9402 9403; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "127.0.0.1:$port is in use"; fi
done
t=$SECONDS
podman kube play "$manifest" >"$state/logs/kube-play.log" 2>&1 || die "podman kube play failed: $state/logs/kube-play.log"

healthy() { /usr/bin/python3 - "$@" <<'EOF'
import sys, urllib.request
try:
    for port in sys.argv[1:]:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
except Exception:
    sys.exit(1)
EOF
}
wait_healthy() {  # SECONDS PORT...
  local deadline=$((SECONDS + $1)); shift
  until healthy "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 1
  done
}
wait_healthy 120 9400 9401 9402 9403 || { dump_logs; die "the pod's services are not ready after 120 s (logs in $state/logs)"; }
log "pod $pod ready in $((SECONDS - t)) s"

# --- Helpers -------------------------------------------------------------------
# The audit's JSON (memaudit status -o json prints {"audits": [...]}).
audit_field() {  # ID PYTHON-EXPR-ON-a ; prints "" when the coordinator is unreachable
  build/bin/memaudit status "$1" "${remote[@]}" -o json 2>/dev/null |
    /usr/bin/python3 -c "import json,sys; a=json.load(sys.stdin)['audits'][0]; print($2)" 2>/dev/null || true
}
wait_done() {  # ID TIMEOUT -> prints the final state
  local deadline=$((SECONDS + $2)) s
  while :; do
    s=$(audit_field "$1" "a['state']")
    case "$s" in SUCCEEDED | FAILED | CANCELLED) echo "$s"; return 0 ;; esac
    [ "$SECONDS" -lt "$deadline" ] || { echo "TIMEOUT(${s:-unreachable})"; return 0; }
    sleep 2
  done
}
wait_running() {  # ID MIN_STEPS TIMEOUT: until a task runs and the audit has MIN_STEPS steps
  local deadline=$((SECONDS + $3)) r
  while :; do
    r=$(audit_field "$1" "'%d %d' % (a['tasks']['running'], int(a['steps_done']))")
    if [ -n "$r" ] && [ "${r% *}" -ge 1 ] && [ "${r#* }" -ge "$2" ]; then return 0; fi
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 1
  done
}
# The audit's events, one per line ("ID TYPE TASK: message"): `memaudit events`
# where the CLI has it, else `memaudit watch`, which prints every event but
# progress and leases when its output is not a terminal.
events() {  # ID FILE
  if build/bin/memaudit --help | grep -qE '^ +events '; then
    build/bin/memaudit events "$1" "${remote[@]}" >"$2" 2>&1 || true
  else
    build/bin/memaudit watch "$1" "${remote[@]}" 2>"$2" >/dev/null || true
  fi
}
# Each task's attempts, releases and lease expiries, read from the
# coordinator's database on its volume (read-only).
attempts() {  # ID -> "tasks=N attempts=[...] releases=N expiries=N"; exit 1 unless every task succeeded at attempt 1
  local db
  db="$(podman volume inspect memaudit-coordinator-data --format '{{.Mountpoint}}')/coordinator.db"
  /usr/bin/python3 - "$db" "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
cols = {r[1] for r in db.execute("PRAGMA table_info(tasks)")}
extra = [c for c in ("releases", "expiries") if c in cols]
rows = db.execute(f"SELECT attempts, state{''.join(', ' + c for c in extra)} FROM tasks WHERE audit_id = ?",
                  (sys.argv[2],)).fetchall()
attempts = sorted({r[0] for r in rows})
totals = " ".join(f"{c}={sum(r[2 + i] for r in rows)}" for i, c in enumerate(extra))
print(f"tasks={len(rows)} attempts={attempts} {totals}")
sys.exit(0 if rows and attempts == [1] else 1)
EOF
}
# PASS when the audit succeeded, no event spent an attempt and every task
# succeeded at attempt 1.
judge() {  # NAME ID STATE SECONDS NOTE
  local name=$1 id=$2 st=$3 secs=$4 note=$5 ev="$state/results/$1-events.txt" att verdict=PASS
  events "$id" "$ev"
  local retried released failed_ev reused
  retried=$(grep -c ' task_retried ' "$ev" || true)
  released=$(grep -c ' task_released ' "$ev" || true)
  failed_ev=$(grep -c ' task_failed ' "$ev" || true)
  reused=$(grep -c ' task_reused ' "$ev" || true)
  att=$(attempts "$id") || verdict=FAIL
  [ "$st" = SUCCEEDED ] || verdict=FAIL
  [ "$retried" = 0 ] && [ "$failed_ev" = 0 ] || verdict=FAIL
  [ "$reused" = 0 ] || { verdict=FAIL; note="$note; models reused, nothing trained"; }
  record "$name" "$verdict" "$secs" "$st; $note; events: task_retried=$retried task_released=$released task_failed=$failed_ev; $att"
  log "$name: $verdict ($st, task_retried=$retried task_released=$released, $att)"
  if [ "$verdict" != PASS ]; then
    log "$name: events ($ev):"
    grep -E ' (task_retried|task_released|task_failed|audit_failed) ' "$ev" | sed 's/^/    /' || true
  fi
}
submit() {  # SPEC -> audit id
  build/bin/memaudit submit "$1" "${remote[@]}"
}

# --- 1. The quickstart, in the pod and on the host, bit for bit ---------------
if [[ " $phases " == *" quickstart "* ]]; then
  t=$SECONDS
  id=$(submit examples/quickstart.yaml)
  st=$(wait_done "$id" 900)
  pod_s=$((SECONDS - t))
  build/bin/memaudit report "$id" "${remote[@]}" --json "$state/results/quickstart-pod.json" >/dev/null \
    || die "memaudit report $id failed"
  log "quickstart in the pod: $st in $pod_s s"
  host_quickstart
  # Every number in the results (ROC points, AUCs, operating points, the most
  # vulnerable examples, counts) compared as IEEE doubles, bit for bit.
  cmp=$(compare_results "$state/results/quickstart-pod.json" "$state/results/quickstart-host.json") &&
    verdict=PASS || verdict=FAIL
  [ "$st" = SUCCEEDED ] || verdict=FAIL
  record quickstart "$verdict" "$pod_s" "pod $st in ${pod_s} s, host ${host_s} s; $cmp"
  log "quickstart: $verdict ($cmp)"
fi

# --- 2. Disruptions ---------------------------------------------------------------
# The quickstart's recipe with 4 models trained for 500 epochs: each task
# trains for about half a minute here, long enough to be disrupted mid-task.
# A seed of its own for each phase, so that no phase reuses another's models.
disrupt_spec() {  # SEED [EPOCHS] -> spec file
  local f="$state/specs/disrupt-$1.yaml"
  cat >"$f" <<EOF
name: disrupt-$1
seed: $1
resources:
  threads_per_task: 1
membership:
  dataset:
    name: fashion_mnist
    pool_size: 2000
  model:
    architecture: mlp
    hidden: [256]
  training:
    optimizer: sgd
    learning_rate: 0.05
    momentum: 0.9
    epochs: ${2:-500}
    batch_size: 64
  reference_models: 4
  attacks: [lira_online_fixed_variance, lira_offline_fixed_variance, rmia, loss]
  population_size: 1000
  fpr_points: [0.01, 0.001]
EOF
  echo "$f"
}
outage() {  # NAME CONTAINER SEED
  local name=$1 c="$pod-$2" id st t note
  t=$SECONDS
  id=$(submit "$(disrupt_spec "$3")")
  wait_running "$id" 500 300 || { record "$name" FAIL $((SECONDS - t)) "no task started"; return; }
  log "$name: stopping $c for $outage_s s (audit $id: $(audit_field "$id" "'%s, %d/%d steps' % (a['state'], int(a['steps_done']), int(a['steps_total']))"))"
  podman stop -t 30 "$c" >/dev/null
  sleep "$outage_s"
  podman start "$c" >/dev/null
  log "$name: $c started again"
  st=$(wait_done "$id" 900)
  note="$2 stopped ${outage_s} s mid-task"
  judge "$name" "$id" "$st" $((SECONDS - t)) "$note"
}
worker_sigterms() {  # NAME SEED
  local name=$1 c="$pod-worker-0" id st t started i
  t=$SECONDS
  # worker-0 alone, so that each SIGTERM lands on the worker holding the
  # tasks, with eight times the epochs, and each SIGTERM 2 s into a task
  # (which it sets back to 0). On 2 cores here worker-0 trains about 6,000
  # steps/s, so the 256,000 steps outlast three SIGTERMs (3 s apart here) on
  # any machine under some ten times that speed.
  podman stop -t 30 "$pod-worker-1" >/dev/null
  id=$(submit "$(disrupt_spec "$2" 4000)")
  for i in 1 2 3; do
    if ! wait_running "$id" 0 300; then
      record "$name" FAIL $((SECONDS - t)) "no task running before SIGTERM $i"
      return
    fi
    sleep 2  # into the task
    started=$(podman inspect "$c" --format '{{.State.StartedAt}}')
    log "$name: SIGTERM $i to $c ($(audit_field "$id" "'%d running, %d/%d steps' % (a['tasks']['running'], int(a['steps_done']), int(a['steps_total']))"))"
    podman kill -s TERM "$c" >/dev/null
    # Restarted by the pod's restartPolicy: Always.
    local deadline=$((SECONDS + 120))
    until [ "$(podman inspect "$c" --format '{{.State.StartedAt}} {{.State.Running}}')" != "$started true" ] &&
          [ "$(podman inspect "$c" --format '{{.State.Running}}')" = true ]; do
      [ "$SECONDS" -lt "$deadline" ] || { record "$name" FAIL $((SECONDS - t)) "worker not restarted after SIGTERM $i"; return; }
      sleep 1
    done
    wait_healthy 60 9402 || true
  done
  st=$(wait_done "$id" 900)
  podman start "$pod-worker-1" >/dev/null
  judge "$name" "$id" "$st" $((SECONDS - t)) "worker sent SIGTERM 3 times while holding a task, restarted each time"
}
[[ " $phases " == *" scorer "* ]] && outage scorer scorer 101
[[ " $phases " == *" coordinator "* ]] && outage coordinator coordinator 102
[[ " $phases " == *" worker "* ]] && worker_sigterms worker 103
exit 0
