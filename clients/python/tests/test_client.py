"""memaudit_client against real services.

A scorer, a coordinator and one worker (the binaries of build/bin) run on
loopback over mutual TLS with certificates made by scripts/make-certs.sh
(openssl), started with the flags `memaudit run` gives them; the coordinator
also accepts bearer tokens. The tests train real (tiny) models. A scorer and
coordinator without a worker check that the client reads every example
spec as the memaudit CLI does.

    PYTHONPATH=build/python MEMAUDIT_BIN_DIR=build/bin \
        /usr/bin/python3 -m unittest -v clients/python/tests/test_client.py

(ctest runs it as python_client_test.)
"""

import hashlib
import json
import math
import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

import memaudit_client
from memaudit_client import Client, MemauditError, SpecError

SOURCE_DIR = pathlib.Path(
    os.environ.get("MEMAUDIT_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[3]
)
BIN_DIR = pathlib.Path(os.environ.get("MEMAUDIT_BIN_DIR") or SOURCE_DIR / "build" / "bin")
START_TIMEOUT_S = 30
AUDIT_TIMEOUT_S = 120

# A membership audit that trains in a few seconds: 8 models of a small MLP,
# each on half of 128 examples for 20 epochs (enough to memorize them), and
# every attack that works with 8 models.
TINY_MODELS = 8
TINY_POOL = 128
TINY_ATTACKS = ["lira_online", "lira_offline", "rmia", "loss"]
TINY_YAML_TEMPLATE = f"""
name: python-client
seed: {{seed}}
resources:
  models_per_task: auto   # the coordinator packs the models into tasks
membership:
  dataset: {{ name: fashion_mnist, pool_size: {TINY_POOL} }}
  model: {{ architecture: mlp, hidden: [64] }}
  training: {{ optimizer: sgd, learning_rate: 0.1, momentum: 0.9, epochs: 20, batch_size: 32 }}
  reference_models: {TINY_MODELS}
  attacks: [{", ".join(TINY_ATTACKS)}]
  population_size: 200
  fpr_points: [0.1, 0.01]
"""
# The scorer reuses the models of an audit with the same recipe and seed:
# each test trains its own.
TINY_YAML = TINY_YAML_TEMPLATE.replace("{seed}", "7")

# An audit that runs for minutes on one worker: cancelled long before.
LONG_SPEC = {
    "name": "python-client-long",
    "seed": 8,
    "resources": {"models_per_task": 1},
    "membership": {
        "dataset": {"pool_size": 4000},
        "model": {"architecture": "mlp", "hidden": [512, 512]},
        "training": {"learning_rate": 0.05, "momentum": 0.9, "epochs": 200, "batch_size": 32},
        "reference_models": 16,
        "attacks": ["loss"],
    },
}


# The coordinator reads the files the own-data examples name at Submit
# (examples/models/make_example_data.py writes them, once per host).
EXAMPLE_DATA = "/tmp/memaudit-own-data"
os.makedirs(EXAMPLE_DATA, exist_ok=True)  # a root must exist when a service starts
DATA_ROOTS = [
    root
    for root in ("/usr/share/datasets/fashion-mnist", "/usr/share/games/fortunes", EXAMPLE_DATA)
    if root == EXAMPLE_DATA or os.path.isdir(root)
]


def ensure_example_data():
    marker = f"{EXAMPLE_DATA}/complete-v2"
    script = SOURCE_DIR / "examples" / "models" / "make_example_data.py"
    subprocess.run(
        ["flock", f"{EXAMPLE_DATA}.lock", "sh", "-c",
         f"test -f {marker} || {{ /usr/bin/python3 {script} {EXAMPLE_DATA} >/dev/null"
         f" && touch {marker}; }}"],
        check=True,
    )


class Cluster:
    """The services as separate processes, with their logs in `dir`."""

    def __init__(self, worker=True):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="memaudit-python-client-"))
        self.certs = self.dir / "certs"
        self.processes = {}
        try:
            self.start(worker)
        except BaseException:
            self.remove()
            raise

    def start(self, worker):
        env = dict(os.environ, MEMAUDIT_TEAMS="alpha")
        subprocess.run(
            ["bash", str(SOURCE_DIR / "scripts" / "make-certs.sh"), str(self.certs)],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        # Bearer tokens: one for team alpha, one for team gamma.
        self.tokens = {"alpha": secrets.token_hex(16), "gamma": secrets.token_hex(16)}
        hashes = self.dir / "token-hashes"
        hashes.write_text(
            "".join(
                f"{hashlib.sha256(t.encode()).hexdigest()} team {team}\n"
                for team, t in self.tokens.items()
            )
        )
        key = ["--capability-key-file", str(self.certs / "capability.key")]
        scorer_port = self.start_service("scorer", key)
        self.scorer = f"127.0.0.1:{scorer_port}"
        coordinator_port = self.start_service(
            "coordinator",
            key
            + ["--lease-ttl-ms", "10000", "--heartbeat-ms", "1000", "--scorer", self.scorer]
            + ["--token-hashes", str(hashes)]
            + [arg for root in DATA_ROOTS for arg in ("--data-root", root)],
        )
        self.address = f"127.0.0.1:{coordinator_port}"
        if not worker:
            return
        self.spawn(
            "worker",
            [str(BIN_DIR / "memaudit-worker"), "--coordinator", self.address, "--device", "cpu"]
            + ["--metrics-listen", "127.0.0.1:0"]
            + self.tls("worker-0"),
        )

    def tls(self, party):
        c = self.certs
        return [
            "--tls-cert", str(c / f"{party}.crt"),
            "--tls-key", str(c / f"{party}.key"),
            "--tls-ca", str(c / "ca.crt"),
        ]  # fmt: skip

    def spawn(self, name, argv):
        if not os.access(argv[0], os.X_OK):
            raise RuntimeError(f"{argv[0]} not found: build the project first (scripts/build.sh)")
        with open(self.dir / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def log(self, name):
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def start_service(self, name, args):
        port_file = self.dir / f"{name}.port"
        self.spawn(
            name,
            [str(BIN_DIR / f"memaudit-{name}"), "--listen", "127.0.0.1:0"]
            + ["--port-file", str(port_file), "--metrics-listen", "127.0.0.1:0"]
            + ["--metrics-port-file", str(self.dir / f"{name}.metrics-port")]
            + ["--db", str(self.dir / f"{name}.db")]
            + args
            + self.tls(name),
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = port_file.read_text().strip() if port_file.exists() else ""
            if text.isdigit() and int(text) > 0:
                return int(text)
            if self.processes[name].poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"memaudit-{name} did not start:\n{self.log(name)}")

    def client(self, party="team-alpha", **kwargs):
        """A client with `party`'s certificate (make-certs.sh's names)."""
        c = self.certs
        return Client(
            self.address, ca=c / "ca.crt", cert=c / f"{party}.crt", key=c / f"{party}.key", **kwargs
        )

    def remove(self):
        """Stops the services and removes their directory (kept, with its
        logs, when MEMAUDIT_KEEP_TEST_DIR is set)."""
        self.stop()
        if os.environ.get("MEMAUDIT_KEEP_TEST_DIR"):
            print(f"services' logs and databases in {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def stop(self):
        # The worker first: stopped mid-task it releases the task.
        for names in (["worker"], ["coordinator", "scorer"]):
            running = [self.processes[n] for n in names if n in self.processes]
            for p in running:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in running:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()
        cls.addClassCleanup(cls.cluster.remove)
        cls.alpha = cls.cluster.client()
        cls.addClassCleanup(cls.alpha.close)

    def logs(self):
        return "\n".join(f"--- {n}.log\n{self.cluster.log(n)}" for n in ("coordinator", "worker"))

    def test_membership_audit_end_to_end(self):
        client = self.alpha
        request_id = memaudit_client.new_request_id()
        submitted = client.submit_request(TINY_YAML, request_id=request_id)
        audit_id = submitted["audit_id"]
        self.assertTrue(audit_id)
        self.assertGreaterEqual(submitted["tasks"], 1)
        # A resent Submit (same key, same spec) answers the same audit.
        self.assertEqual(client.submit(TINY_YAML, request_id=request_id), audit_id)

        events = list(client.watch(audit_id, timeout=AUDIT_TIMEOUT_S))
        self.assertGreater(len(events), 2, self.logs())
        sequences = [e.sequence for e in events]
        self.assertEqual(sequences, sorted(set(sequences)))
        self.assertIn("submitted", events[0].type.lower())
        self.assertTrue(all(e.audit_id == audit_id for e in events))
        progress = [e.progress for e in events]
        self.assertEqual(progress, sorted(progress))
        self.assertTrue(all(0.0 <= p <= 1.0 for p in progress))
        last = events[-1]
        self.assertTrue(last.finished)
        self.assertTrue(last.type.lower().endswith("audit_succeeded"), last)
        self.assertEqual(last.state, "SUCCEEDED", f"{last}\n{self.logs()}")
        self.assertEqual(last.progress, 1.0)
        self.assertTrue(all(not e.finished for e in events[:-1]))
        # Watching an audit that has ended replays its events, to the last.
        replayed = list(client.watch(audit_id, timeout=30))
        self.assertEqual([e.sequence for e in replayed], sequences)
        self.assertEqual([e.type for e in replayed], [e.type for e in events])
        rest = list(client.watch(audit_id, after_sequence=sequences[-2], timeout=30))
        self.assertEqual([e.sequence for e in rest], sequences[-1:])

        audit = client.get(audit_id)
        self.assertEqual(audit["state"], "SUCCEEDED")
        self.assertEqual(audit["team"], "alpha")
        self.assertEqual(audit["tasks"]["total"], submitted["tasks"])
        self.assertEqual(audit["tasks"]["succeeded"], submitted["tasks"])
        self.assertGreater(audit["steps_total"], 0)
        self.assertIsInstance(audit["steps_total"], int)  # uint64: int, not JSON's string
        self.assertEqual(audit["steps_done"], audit["steps_total"])
        self.assertEqual(audit["spec"]["membership"]["reference_models"], TINY_MODELS)
        # wait() on an audit that has ended returns at once.
        self.assertEqual(client.wait(audit_id, timeout=30)["state"], "SUCCEEDED")

        json_path = self.cluster.dir / "results.json"
        report = client.report(audit_id, json_path=json_path)
        self.assertEqual(report["audit_id"], audit_id)
        self.assertTrue(report["complete"])
        self.assertEqual(report["models"], TINY_MODELS)
        self.assertEqual(report["examples"], TINY_POOL)
        # Every example is in exactly half of the models (the keep-matrix),
        # and each model in turn is the target.
        self.assertEqual(report["members"], TINY_MODELS * TINY_POOL // 2)
        self.assertEqual(report["non_members"], TINY_MODELS * TINY_POOL // 2)
        self.assertEqual([a["attack"].lower() for a in report["attacks"]], TINY_ATTACKS)
        for attack in report["attacks"]:
            with self.subTest(attack=attack["attack"]):
                self.assertTrue(0.0 <= attack["auc"] <= 1.0, attack["auc"])
                self.assertTrue(0.5 <= attack["balanced_accuracy"] <= 1.0)
                self.assertEqual([p["fpr_target"] for p in attack["operating_points"]], [0.1, 0.01])
                for point in attack["operating_points"]:
                    self.assertTrue(0.0 <= point["tpr"] <= 1.0)
                    self.assertLessEqual(point["fpr"], point["fpr_target"])
                    self.assertIsInstance(point["threshold"], float)  # also inf: a float
                self.assertGreater(len(attack["roc"]), 10)
        # Training on half the pool leaves a trace the LiRA attack finds.
        self.assertGreater(report["attacks"][0]["auc"], 0.5)

        # The JSON file is protobuf's JSON mapping, as `memaudit report --json`.
        written = json.loads(json_path.read_text())
        self.assertEqual(written["members"], str(report["members"]))
        self.assertEqual([a["auc"] for a in written["attacks"]], [a["auc"] for a in report["attacks"]])

        # The per-example data as NumPy arrays: the AUC follows from the
        # exported scores and the keep-matrix alone.
        arrays = client.export(audit_id)
        keep = arrays["keep"]
        self.assertEqual(keep.shape, (TINY_MODELS, TINY_POOL))
        self.assertEqual(str(keep.dtype), "uint8")
        self.assertEqual(arrays["phi"].shape, (TINY_MODELS, TINY_POOL))
        targets = arrays["target_model"]
        for attack in report["attacks"]:
            with self.subTest(export=attack["attack"]):
                scores = arrays["score_" + attack["attack"].lower()]
                truth = keep[targets]
                members, non_members = scores[truth == 1], scores[truth == 0]
                # Mann-Whitney with mid-ranks, ties counted 1/2.
                greater = (members[:, None] > non_members[None, :]).sum()
                ties = (members[:, None] == non_members[None, :]).sum()
                auc = (greater + 0.5 * ties) / (members.size * non_members.size)
                self.assertAlmostEqual(auc, attack["auc"], places=12)
        with self.assertRaises(memaudit_client.MemauditError) as missing:
            client.export("a-00000000000000000000000000000000")
        self.assertEqual(missing.exception.code, grpc.StatusCode.NOT_FOUND)

        # The audit against itself, archived and as a report dict: every
        # metric of its spec, none changed.
        changes = client.diff(audit_id, str(json_path))
        self.assertGreater(len(changes), 0)
        self.assertEqual(changes, client.diff(audit_id, report))
        for change in changes:
            with self.subTest(diff=change.metric):
                self.assertIsNotNone(change.old)
                self.assertEqual(change.old, change.new)
                self.assertFalse(change.significant)
        self.assertEqual(memaudit_client.regressions(changes), [])
        partial = dict(report, complete=False)
        with self.assertRaises(memaudit_client.MemauditError) as refused:
            client.diff(audit_id, partial)
        self.assertEqual(refused.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("no complete results", str(refused.exception))

        listed = {a["audit_id"]: a for a in client.list()}
        self.assertIn(audit_id, listed)
        self.assertEqual(listed[audit_id]["state"], "SUCCEEDED")
        self.assertEqual(len(client.list(limit=1)), 1)

    def test_cancel_ends_an_audit_cancelled(self):
        client = self.alpha
        audit_id = client.submit(LONG_SPEC)
        seen = []
        # Cancel once training has begun, from the progress callback.
        def on_event(event):
            seen.append(event)
            if len(seen) == 2:
                cancelled = client.cancel(audit_id)
                self.assertEqual(cancelled["audit_id"], audit_id)
                self.assertEqual(cancelled["state"], "CANCELLED")

        final = client.wait(audit_id, on_event=on_event, timeout=AUDIT_TIMEOUT_S)
        self.assertEqual(final["state"], "CANCELLED", self.logs())
        self.assertTrue(seen[-1].finished)
        self.assertIn("cancelled", seen[-1].type.lower())
        self.assertIn("cancelled by team alpha", seen[-1].message)
        self.assertLess(final["tasks"]["succeeded"], final["tasks"]["total"])
        self.assertEqual(final["tasks"]["total"], 16)
        self.assertEqual(client.get(audit_id)["state"], "CANCELLED")
        # Cancelling again changes nothing.
        self.assertEqual(client.cancel(audit_id)["state"], "CANCELLED")

    def test_errors_carry_the_code_and_name_the_field(self):
        client = self.alpha
        # The coordinator's validation: an odd number of models.
        bad = TINY_YAML.replace(f"reference_models: {TINY_MODELS}", "reference_models: 7")
        with self.assertRaises(MemauditError) as refused:
            client.submit(bad)
        self.assertEqual(refused.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("reference_models", refused.exception.message)
        self.assertIn("(got 7)", refused.exception.message)
        self.assertNotIsInstance(refused.exception, SpecError)  # the server said so
        if refused.exception.details:  # the problems as data, where the server sends them
            self.assertIn("membership.reference_models",
                          [v["field"] for v in refused.exception.violations])

        # The spec's reading (Validate, as the CLI reads it): an unknown key, refused
        # before anything is submitted.
        with self.assertRaises(SpecError) as unread:
            client.submit(TINY_YAML.replace("hidden:", "hiden:"))
        self.assertEqual(unread.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn('membership.model.hiden: unknown field; did you mean "hidden"?', str(unread.exception))

        with self.assertRaises(MemauditError) as missing:
            client.get("a-0123456789abcdef")
        self.assertEqual(missing.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("a-0123456789abcdef", missing.exception.message)

    def test_tokens_and_teams(self):
        c = self.cluster
        ca = c.certs / "ca.crt"
        # Team alpha by token sees what team alpha submitted by certificate.
        with Client(c.address, ca=ca, token=c.tokens["alpha"]) as by_token:
            audit_id = by_token.submit(LONG_SPEC)
            self.assertEqual(by_token.get(audit_id)["team"], "alpha")
            self.assertIn(audit_id, [a["audit_id"] for a in self.alpha.list()])
            # Another team's audit answers exactly like a missing one.
            token_file = c.dir / "gamma.token"
            token_file.write_text(c.tokens["gamma"] + "\n")
            with Client(c.address, ca=ca, token_file=token_file) as gamma:
                for call in (gamma.get, gamma.cancel, gamma.report):
                    with self.assertRaises(MemauditError) as hidden:
                        call(audit_id)
                    self.assertEqual(hidden.exception.code, grpc.StatusCode.NOT_FOUND)
                self.assertNotIn(audit_id, [a["audit_id"] for a in gamma.list()])
            self.assertEqual(by_token.cancel(audit_id)["state"], "CANCELLED")

        # No certificate and no token: refused before any work.
        with Client(c.address, ca=ca) as nobody:
            with self.assertRaises(MemauditError) as anonymous:
                nobody.list()
            self.assertEqual(anonymous.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        with Client(c.address, ca=ca, token="not-a-token") as wrong:
            with self.assertRaises(MemauditError) as unknown:
                wrong.list()
            self.assertEqual(unknown.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        # Plain text to a TLS port reaches no one.
        with Client(c.address, insecure=True, timeout=5) as plain:
            with self.assertRaises(MemauditError) as unreachable:
                plain.list()
            self.assertEqual(unreachable.exception.code, grpc.StatusCode.UNAVAILABLE)
            self.assertIn(c.address, unreachable.exception.message)

    def test_example_script(self):
        c = self.cluster
        spec = c.dir / "tiny.yaml"
        spec.write_text(TINY_YAML_TEMPLATE.replace("{seed}", "9"))
        results = c.dir / "example-results.json"
        env = dict(
            os.environ,
            MEMAUDIT_COORDINATOR=c.address,
            MEMAUDIT_TLS_CA=str(c.certs / "ca.crt"),
            MEMAUDIT_TLS_CERT=str(c.certs / "team-alpha.crt"),
            MEMAUDIT_TLS_KEY=str(c.certs / "team-alpha.key"),
        )
        script = SOURCE_DIR / "examples" / "python" / "submit_and_watch.py"

        def run_script(*args):
            return subprocess.run(
                [sys.executable, str(script), str(spec), *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=AUDIT_TIMEOUT_S,
            )

        run = run_script("--json", str(results))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("SUCCEEDED", run.stderr)
        aucs = {}
        for line in run.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0] in TINY_ATTACKS:
                aucs[fields[0]] = float(fields[1])
        self.assertEqual(sorted(aucs), sorted(TINY_ATTACKS), run.stdout)
        self.assertTrue(all(0.0 <= v <= 1.0 and math.isfinite(v) for v in aucs.values()))
        written = json.loads(results.read_text())
        self.assertEqual(written["models"], TINY_MODELS)

        # --cancel-after: cancelled while it trains, exit 1 as for any audit
        # that did not succeed.
        spec.write_text(json.dumps(LONG_SPEC))  # JSON is YAML
        run = run_script("--cancel-after", "1")
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn("CANCELLED", run.stderr)


class SpecReadingTest(unittest.TestCase):
    """The client reads every example spec as the memaudit CLI does: the CLI
    and the client submit each with the same request id, which the
    coordinator answers with the same audit only when the two specs are the
    same (a different spec under a used id is FAILED_PRECONDITION). No
    worker: nothing trains."""

    @classmethod
    def setUpClass(cls):
        ensure_example_data()
        cls.cluster = Cluster(worker=False)
        cls.addClassCleanup(cls.cluster.remove)
        cls.client = cls.cluster.client()
        cls.addClassCleanup(cls.client.close)

    def cli_submit(self, spec, request_id):
        c = self.cluster.certs
        run = subprocess.run(
            [str(BIN_DIR / "memaudit"), "submit", str(spec), "--request-id", request_id]
            + ["--coordinator", self.cluster.address, "--tls-ca", str(c / "ca.crt")]
            + ["--tls-cert", str(c / "team-alpha.crt"), "--tls-key", str(c / "team-alpha.key")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.stdout.strip()

    def test_examples_read_as_the_cli_reads_them(self):
        examples = sorted((SOURCE_DIR / "examples").glob("*.yaml"))
        self.assertGreater(len(examples), 10)
        for example in examples:
            with self.subTest(example=example.name):
                request_id = memaudit_client.new_request_id()
                audit_id = self.cli_submit(example, request_id)
                self.assertTrue(audit_id.startswith("a-"), audit_id)
                self.assertEqual(self.client.submit(example, request_id=request_id), audit_id)
                self.assertEqual(self.client.cancel(audit_id)["state"], "CANCELLED")
        # The check can fail: another spec under a used id is refused.
        spec = self.client.validate(examples[0]).spec
        spec.seed += 1
        with self.assertRaises(MemauditError) as refused:
            self.client.submit(spec, request_id=request_id)
        self.assertEqual(refused.exception.code, grpc.StatusCode.FAILED_PRECONDITION)


if __name__ == "__main__":
    unittest.main()
