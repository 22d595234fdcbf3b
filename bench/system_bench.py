#!/usr/bin/env python3
"""End-to-end system benchmark: `memaudit run` against a plain PyTorch loop.

The work, per shape: a LiRA-style shadow-model recipe -- K MLPs 784-H-10 on
Fashion-MNIST, each on its own random half of a pool of N training images, momentum
SGD (lr 0.05, momentum 0.9), batch B, E epochs, one thread everywhere.

  memaudit  `memaudit run SPEC -w 1` on a membership spec of that recipe
            (threads_per_task 1; the one worker offers 1 thread), with models_per_task
            auto (the default: the coordinator decides), 1 and K (one packed ensemble).
            End to end: starting the scorer, coordinator and worker, training,
            evaluating every model on the pool, the LiRA/loss signals, scoring,
            the report, shutdown.
  peer      /usr/bin/python3 bench/peer/shadow_peer.py: a fresh module, optimizer
            and shuffled DataLoader per model, one after another, one thread.
            Training only: it computes NO membership signals and scores nothing.
            Its wall time includes starting Python, importing torch and reading
            the dataset.

The two alternate run by run (R repetitions, the order reversed on every other
repetition). Printed per shape and memaudit variant: the median wall time of each,
their ratio peer/memaudit (> 1: memaudit faster) and its per-repetition range, the
CPU seconds of each (all processes each one started, so > wall means more than one
core was busy), and memaudit's phases from `memaudit run --timings` when the binary
has that flag.

  /usr/bin/python3 bench/system_bench.py                 # shapes a and b, R = 3
  /usr/bin/python3 bench/system_bench.py --reps 5 --shape a=16,256,128,10000,5

On a GPU machine, --device cuda runs both on the GPU: the spec asks for
gpus_per_task 1, `memaudit run` starts its worker with --device cuda (and
--matmul-precision, fp32 unless given), and the peer keeps its data on the GPU.
--python names the interpreter with PyTorch where /usr/bin/python3 has none.

Needs Debian's dataset-fashion-mnist (exits 2 without it) and build/bin/memaudit.
"""
import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "peer", "shadow_peer.py")
PYTHON = "/usr/bin/python3"
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
DATA_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
# name=K,H,B,N,E: models, hidden width, batch, pool size, epochs.
DEFAULT_SHAPES = ("a=16,256,128,10000,5", "b=32,32,64,10000,8")
MAX_MODELS_PER_TASK = 64  # resources.models_per_task's bound (docs/spec.md)

Shape = collections.namedtuple("Shape", "name models hidden batch pool epochs")
Run = collections.namedtuple("Run", "wall cpu extra")  # extra: dict of parsed numbers


def parse_shape(text):
    name, _, numbers = text.partition("=")
    values = [int(v) for v in numbers.split(",")]
    if not name or len(values) != 5:
        raise argparse.ArgumentTypeError(f"want NAME=K,H,B,N,E (got {text!r})")
    return Shape(name, *values)


def describe(shape):
    half = shape.pool // 2
    steps = shape.models * shape.epochs * -(-half // shape.batch)
    return (f"{shape.models} x 784-{shape.hidden}-10, batch {shape.batch}, pool {shape.pool} "
            f"({half} per model), {shape.epochs} epochs, {steps} steps")


def check_dataset(data):
    missing = [f for f in DATA_FILES if not os.path.isfile(os.path.join(data, f))]
    if missing:
        print(f"Fashion-MNIST not found in {data} (missing {', '.join(missing)}).\n"
              "Install it with:  sudo apt-get install dataset-fashion-mnist\n"
              "or pass --data DIR holding the IDX files.", file=sys.stderr)
        sys.exit(2)


def write_spec(path, shape, per_task, data, device, numerics):
    """A membership spec of the shape's recipe, LiRA and loss attacks (no RMIA population)."""
    dataset_path = "" if data == DEFAULT_DATA else f"\n    path: {data}"
    gpus = 1 if device == "cuda" else 0
    with open(path, "w") as f:
        f.write(f"""name: system-bench-{shape.name}-p{per_task}
seed: 2026
resources:
  threads_per_task: 1
  gpus_per_task: {gpus}
  models_per_task: {per_task}
  numerics: {numerics}
membership:
  dataset:
    name: fashion_mnist
    pool_size: {shape.pool}{dataset_path}
  model:
    architecture: mlp
    hidden: [{shape.hidden}]
  training:
    optimizer: sgd
    learning_rate: 0.05
    momentum: 0.9
    epochs: {shape.epochs}
    batch_size: {shape.batch}
  reference_models: {shape.models}
  attacks: [lira_online, lira_offline, lira_online_fixed_variance, lira_offline_fixed_variance, loss]
""")


def variants_of(shape):
    """models_per_task values run: the default (auto, the coordinator's choice), one
    model per task, and every model in one task."""
    return list(dict.fromkeys(["auto", 1, min(shape.models, MAX_MODELS_PER_TASK)]))


def run_timed(argv, log_prefix):
    """Runs argv to completion: (wall s, CPU s of it and of every process it reaped,
    stdout + stderr). Separate files, so a line on stderr is never cut into stdout's."""
    with open(log_prefix + ".out", "w+") as out, open(log_prefix + ".err", "w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)  # Linux: usage includes reaped children
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        output = out.read() + "\n" + err.read()
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}:\n{output[-4000:]}")
    return wall, usage.ru_utime + usage.ru_stime, output


def parse_fields(output, prefix):
    """The numbers of the last `prefix key=value ...` line in output, or None."""
    lines = [l for l in output.splitlines() if l.startswith(prefix)]
    if not lines:
        return None
    fields = (item.split("=", 1) for item in lines[-1][len(prefix):].split() if "=" in item)
    return {k: float(v) for k, v in fields}


def has_timings_flag(memaudit):
    help_text = subprocess.run([memaudit, "run", "--help"], capture_output=True, text=True)
    return "--timings" in help_text.stdout + help_text.stderr


def run_memaudit(memaudit, spec, work, timings, data, device, precision):
    run_dir = os.path.join(work, "run")
    argv = [memaudit, "run", spec, "-w", "1", "--dir", run_dir]
    if device != "cpu":
        argv += ["--device", device, "--matmul-precision", precision]
    if timings:
        argv.append("--timings")
    if data != DEFAULT_DATA:
        argv += ["--data-root", data]
    wall, cpu, output = run_timed(argv, os.path.join(work, "memaudit"))
    shutil.rmtree(run_dir)  # a fresh scorer next time: no stored models to reuse
    return Run(wall, cpu, parse_fields(output, "timings:") or {})


def run_peer(shape, work, data, device, python):
    argv = [python, PEER, f"--data={data}", f"--models={shape.models}",
            f"--hidden={shape.hidden}", f"--batch={shape.batch}", f"--pool={shape.pool}",
            f"--epochs={shape.epochs}", f"--device={device}"]
    wall, cpu, output = run_timed(argv, os.path.join(work, "peer"))
    return Run(wall, cpu, parse_fields(output, "peer:") or {})


def median_of(runs, key):
    values = [r.extra[key] for r in runs if key in r.extra]
    return statistics.median(values) if values else float("nan")


def summarize(shape, variants, peer, mem):
    print(f"\nshape {shape.name}: {describe(shape)}; medians of {len(peer)} alternating reps (ratio: of the medians)")
    print(f"  {'memaudit variant':<20} {'memaudit s':>10} {'peer s':>7} {'peer/memaudit':>13}"
          f"  {'per-rep range':<13} {'memaudit cpu s':>14} {'peer cpu s':>10}")
    peer_wall = statistics.median(r.wall for r in peer)
    for p in variants:
        runs = mem[p]
        wall = statistics.median(r.wall for r in runs)
        per_rep = [a.wall / b.wall for a, b in zip(peer, runs)]
        spread = f"{min(per_rep):.2f}-{max(per_rep):.2f}x"
        print(f"  {f'models_per_task={p}':<20} {wall:>10.2f} {peer_wall:>7.2f} "
              f"{peer_wall / wall:>12.2f}x  {spread:<13} "
              f"{statistics.median(r.cpu for r in runs):>14.2f} "
              f"{statistics.median(r.cpu for r in peer):>10.2f}")
    if "auto" in mem and 1 in mem:
        one = statistics.median(r.wall for r in mem[1])
        auto = statistics.median(r.wall for r in mem["auto"])
        per_rep = [b.wall / a.wall for a, b in zip(mem["auto"], mem[1])]
        print(f"  auto against one model per task (models_per_task=1 / auto, > 1: auto faster): "
              f"{one / auto:.2f}x, per rep {min(per_rep):.2f}-{max(per_rep):.2f}x")
    for p in variants:
        keys = list(dict.fromkeys(k for r in mem[p] for k in r.extra))
        if keys:
            print(f"  memaudit models_per_task={p} phases (median s): " +
                  " ".join(f"{k}={median_of(mem[p], k):.2f}" for k in keys))
    peer_train = median_of(peer, "train_s")
    print(f"  peer phases (median s): load_s={median_of(peer, 'load_s'):.2f} "
          f"train_s={peer_train:.2f} (the rest of its wall: Python start-up, import torch)")
    for p in variants:
        tasks = median_of(mem[p], "tasks_s")
        if tasks == tasks:  # not NaN: --timings gave the training phase
            print(f"  training only, peer train_s / memaudit tasks_s (which includes the worker "
                  f"reading the dataset), models_per_task={p}: "
                  f"{peer_train / tasks:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="alternating repetitions (default 3)")
    ap.add_argument("--shape", type=parse_shape, action="append",
                    help="NAME=K,H,B,N,E (repeatable; default: %s)" % " ".join(DEFAULT_SHAPES))
    ap.add_argument("--memaudit", default=os.environ.get("MEMAUDIT_BIN", "build/bin/memaudit"))
    ap.add_argument("--data", default=DEFAULT_DATA, help="directory with the Fashion-MNIST IDX files")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="where memaudit's worker and the peer train (default cpu)")
    ap.add_argument("--matmul-precision", default="fp32", choices=("fp32", "tf32", "bf16"),
                    help="memaudit's CUDA product precision (--device cuda only)")
    ap.add_argument("--numerics", default="portable", choices=("portable", "native"),
                    help="memaudit's resources.numerics (default %(default)s: AVX2 kernels on every "
                         "CPU; native: the machine's fastest, as the peer's PyTorch uses)")
    ap.add_argument("--python", default=PYTHON, help="the peer's interpreter (default %(default)s)")
    a = ap.parse_args()
    if a.device == "cpu" and a.matmul_precision != "fp32":
        ap.error("--matmul-precision: the CPU runs fp32 only")
    shapes = a.shape or [parse_shape(s) for s in DEFAULT_SHAPES]
    check_dataset(a.data)
    if not os.access(a.memaudit, os.X_OK):
        sys.exit(f"{a.memaudit} not found: build it (scripts/build.sh) or pass --memaudit")
    timings = has_timings_flag(a.memaudit)

    on = "" if a.device == "cpu" else f", on {a.device} ({a.matmul_precision} products)"
    print("memaudit: `memaudit run -w 1`, threads_per_task 1, end to end (start-up, training, "
          f"LiRA/loss signals, scoring, report, shutdown){on}")
    print(f"peer: {a.python} bench/peer/shadow_peer.py, one thread, TRAINING ONLY "
          f"(no evaluation, no membership signals, no scoring){' on ' + a.device if on else ''}")
    if not timings:
        print(f"{a.memaudit} run has no --timings flag: memaudit wall time only")
    print("load average %.2f %.2f %.2f" % os.getloadavg(), flush=True)

    work = tempfile.mkdtemp(prefix="memaudit-system-bench-")
    try:
        results = {}
        for rep in range(a.reps):
            for shape in shapes:
                variants = variants_of(shape)
                peer, mem = results.setdefault(shape.name, ([], {p: [] for p in variants}))
                order = ["peer"] + variants
                for who in order if rep % 2 == 0 else reversed(order):
                    if who == "peer":
                        peer.append(run_peer(shape, work, a.data, a.device, a.python))
                        r, label = peer[-1], "peer"
                    else:
                        spec = os.path.join(work, f"{shape.name}-p{who}.yaml")
                        write_spec(spec, shape, who, a.data, a.device, a.numerics)
                        mem[who].append(run_memaudit(a.memaudit, spec, work, timings, a.data,
                                                     a.device, a.matmul_precision))
                        r, label = mem[who][-1], f"memaudit models_per_task={who}"
                    print(f"rep {rep + 1} shape {shape.name} {label:<30} wall {r.wall:6.2f} s  "
                          f"cpu {r.cpu:6.2f} s", flush=True)
        for shape in shapes:
            peer, mem = results[shape.name]
            summarize(shape, variants_of(shape), peer, mem)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("load average %.2f %.2f %.2f" % os.getloadavg())
    device = "" if a.device == "cpu" else (
        f" --device {a.device} --matmul-precision {a.matmul_precision} --python {a.python}")
    if a.numerics != "portable":
        device += f" --numerics {a.numerics}"
    print("reproduce: /usr/bin/python3 bench/system_bench.py --reps %d %s --memaudit %s --data %s%s" % (
        a.reps, " ".join(f"--shape {s.name}={s.models},{s.hidden},{s.batch},{s.pool},{s.epochs}"
                         for s in shapes), a.memaudit, a.data, device))


if __name__ == "__main__":
    main()
