"""memaudit_client without any service: conversions, errors, specs as
requests, export arrays and frames, and the version.

Calls go to a stand-in for the coordinator's stub, so nothing listens and
nothing is started. ctest runs this module (python_client_offline_test)
with the package pip-installed into a fresh virtual environment
(python_client_install), and VersionTest (python_client_version_test) with
MEMAUDIT_BIN_DIR set, against `memaudit --version`:

    python3 -m venv --system-site-packages /tmp/venv
    /tmp/venv/bin/pip install --no-build-isolation ./clients/python
    cd clients/python/tests && /tmp/venv/bin/python -m unittest -v test_offline
"""

import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import grpc

import memaudit_client
from memaudit.v1 import audit_pb2, errors_pb2, export_pb2, results_pb2, spec_pb2
from memaudit_client import Client, MemauditError, SpecError, to_dict, to_json
from memaudit_client import arrays as arrays_module
from memaudit_client.diff import changes_from_proto

try:
    import numpy
except ImportError:  # the tests that need it are skipped
    numpy = None
try:
    import pandas
except ImportError:
    pandas = None


class FakeRpcError(grpc.RpcError):
    """What a failed gRPC call raises: a grpc.RpcError that is a grpc.Call."""

    def __init__(self, code, details="", trailers=()):
        super().__init__()
        self._code, self._details, self._trailers = code, details, tuple(trailers)

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailers


def violations_trailer(*problems, message="refused"):
    """The grpc-status-details-bin trailer the coordinator sends with a
    refused spec: an ErrorStatus holding FieldViolations."""
    violations = errors_pb2.FieldViolations()
    for field, description in problems:
        violations.violations.add(field=field, description=description)
    status = errors_pb2.ErrorStatus(code=grpc.StatusCode.INVALID_ARGUMENT.value[0], message=message)
    status.details.add().Pack(violations)
    return [("grpc-status-details-bin", status.SerializeToString())]


class FakeStub:
    """Stands in for AuditServiceStub: each method answers from `answers`
    (a message, an exception to raise, or for Export an iterable of
    pieces) and records its requests."""

    def __init__(self, **answers):
        self.answers = answers
        self.requests = []

    def __getattr__(self, method):
        if method not in self.answers:
            raise AttributeError(method)

        def call(request, timeout=None):
            self.requests.append((method, request))
            answer = self.answers[method]
            if isinstance(answer, BaseException):
                raise answer
            if method == "Export":
                return FakeStream(answer)
            return answer

        return call


class FakeStream:
    """A server stream: iterates its items (raising an exception item) and
    can be cancelled."""

    def __init__(self, items):
        self.items = list(items)
        self.cancelled = False

    def __iter__(self):
        for item in self.items:
            if isinstance(item, BaseException):
                raise item
            yield item

    def cancel(self):
        self.cancelled = True


def offline_client(**answers):
    client = Client("127.0.0.1:1", insecure=True)  # never connects: the stub is replaced
    client._stub = FakeStub(**answers)
    return client


def piece(name, shape, dtype, values, offset=0, axes=None):
    return export_pb2.ExportArray(
        name=name,
        axes=axes if axes is not None else ["model", "example"][: len(shape)],
        shape=shape,
        dtype=dtype,
        description=f"{name} of each element",
        offset=offset,
        values=values,
        audit_id="a-1",
    )


class DiffTest(unittest.TestCase):
    def test_changes_are_values_and_regressions_the_worse_ones(self):
        response = audit_pb2.DiffResponse()
        worse = response.changes.add(metric="loss.auc", significant=True, worse=True)
        worse.old_reading.value, worse.old_reading.low, worse.old_reading.high = 0.6, 0.58, 0.62
        worse.new_reading.value, worse.new_reading.low, worse.new_reading.high = 0.7, 0.68, 0.72
        worse.difference.value, worse.difference.low = 0.1, 0.07
        worse.difference.high = 0.13
        response.changes.add(metric="rmia.auc").new_reading.value = 0.5
        changes = changes_from_proto(response)
        self.assertEqual([c.metric for c in changes], ["loss.auc", "rmia.auc"])
        self.assertEqual(changes[0].old, memaudit_client.Reading(0.6, 0.58, 0.62))
        self.assertEqual(changes[0].difference.high, 0.13)
        self.assertIsNone(changes[1].old)
        self.assertIsNone(changes[1].difference)
        self.assertEqual(memaudit_client.regressions(changes), changes[:1])


class GateVerdictsTest(unittest.TestCase):
    def test_verdicts_are_values_in_the_specs_order(self):
        results = results_pb2.AuditResults(complete=True)
        results.gates.add(metric="rmia.auc", bound="max", limit=0.6, value=0.7, low=0.68,
                          high=0.72, outcome=results_pb2.GATE_FAIL, reason="above")
        results.gates.add(metric="loss.auc", bound="max", limit=0.6, value=0.55, low=0.5,
                          high=0.62, outcome=results_pb2.GATE_INCONCLUSIVE)
        gates = memaudit_client.gate_verdicts(to_dict(results))
        self.assertEqual([g.metric for g in gates], ["rmia.auc", "loss.auc"])
        self.assertTrue(gates[0].failed)
        self.assertEqual(gates[0].outcome, "fail")
        self.assertEqual(gates[0].low, 0.68)
        self.assertTrue(gates[1].inconclusive)
        self.assertFalse(gates[1].passed)
        self.assertEqual(memaudit_client.gate_verdicts(to_dict(results_pb2.AuditResults())), [])


class ConvertTest(unittest.TestCase):
    def test_64_bit_integers_are_ints_and_enums_names(self):
        audit = audit_pb2.Audit(audit_id="a-1", state=audit_pb2.RUNNING, steps_total=2**40 + 1)
        data = to_dict(audit)
        self.assertEqual(data["steps_total"], 2**40 + 1)
        self.assertIsInstance(data["steps_total"], int)
        self.assertEqual(data["state"], "RUNNING")
        # Every primitive field is present, at its zero value.
        self.assertEqual(data["steps_done"], 0)
        self.assertEqual(data["error"], "")
        self.assertNotIn("tasks", data)  # an unset message is left out
        self.assertNotIn("steps_done", to_dict(audit, defaults=False))
        # JSON keeps protobuf's mapping: 64-bit integers as strings.
        written = json.loads(to_json(audit))
        self.assertEqual(written["steps_total"], str(2**40 + 1))
        self.assertEqual(written["steps_done"], "0")

    def test_non_finite_numbers_are_floats_in_nested_and_repeated_fields(self):
        results = results_pb2.AuditResults(audit_id="a-1", members=3)
        attack = results.attacks.add(attack=results_pb2.LIRA_ONLINE, auc=0.75)
        attack.operating_points.add(fpr_target=0.001, threshold=math.inf)
        attack.operating_points.add(fpr_target=0.01, threshold=-math.inf, tpr=math.nan)
        data = to_dict(results)
        self.assertEqual(data["members"], 3)
        self.assertEqual(data["attacks"][0]["attack"], "LIRA_ONLINE")
        points = data["attacks"][0]["operating_points"]
        self.assertEqual(points[0]["threshold"], math.inf)
        self.assertEqual(points[1]["threshold"], -math.inf)
        self.assertTrue(math.isnan(points[1]["tpr"]))
        self.assertIsInstance(points[0]["tpr"], float)
        text = to_json(results)
        self.assertIn('"Infinity"', text)
        self.assertIn('"-Infinity"', text)
        self.assertIn('"NaN"', text)
        self.assertTrue(text.endswith("\n"))


class ErrorsTest(unittest.TestCase):
    def test_code_message_and_violations_from_an_rpc_error(self):
        error = FakeRpcError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "membership.reference_models: must be an even number in [4, 4096] (got 7)",
            violations_trailer(("membership.reference_models", "must be an even number (got 7)")),
        )
        converted = MemauditError.from_rpc_error(error, "host:7400")
        self.assertEqual(converted.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("(got 7)", converted.message)
        self.assertEqual(str(converted), f"INVALID_ARGUMENT: {converted.message}")
        self.assertEqual(
            converted.violations,
            [{"field": "membership.reference_models", "description": "must be an even number (got 7)"}],
        )
        self.assertEqual(converted.details[0]["@type"], "type.googleapis.com/memaudit.v1.FieldViolations")

    def test_unreachable_names_the_address(self):
        for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            converted = MemauditError.from_rpc_error(FakeRpcError(code, "connect failed"), "host:7400")
            self.assertEqual(converted.code, code)
            self.assertEqual(converted.message, "coordinator at host:7400 is not reachable (connect failed)")
        other = MemauditError.from_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no audit"), "h:1")
        self.assertEqual(other.message, "no audit")

    def test_what_an_error_lacks_reads_as_unknown_and_empty(self):
        converted = MemauditError.from_rpc_error(RuntimeError("boom"))
        self.assertEqual(converted.code, grpc.StatusCode.UNKNOWN)
        self.assertEqual(converted.message, "boom")
        self.assertEqual(converted.details, [])
        garbled = FakeRpcError(
            grpc.StatusCode.INTERNAL, None, [("grpc-status-details-bin", b"\xff\xff not a status")]
        )
        converted = MemauditError.from_rpc_error(garbled)
        self.assertEqual((converted.message, converted.details, converted.violations), ("", [], []))

    def test_a_spec_error_is_a_memaudit_error_and_a_value_error(self):
        error = SpecError("x.yaml: not valid YAML")
        self.assertIsInstance(error, MemauditError)
        self.assertIsInstance(error, ValueError)
        self.assertEqual(error.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(SpecError("gone", code=grpc.StatusCode.NOT_FOUND).code, grpc.StatusCode.NOT_FOUND)


class SpecRequestTest(unittest.TestCase):
    """Specs become ValidateRequests; the coordinator reads them."""

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="memaudit-offline-"))
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def test_a_path_sends_the_file_named_by_its_path(self):
        spec = self.dir / "tiny.yaml"
        spec.write_text("membership: {reference_models: 8}\n")
        for given in (spec, str(spec)):
            request = memaudit_client.validate_request(given)
            self.assertEqual(request.WhichOneof("source"), "yaml")
            self.assertEqual(request.yaml, "membership: {reference_models: 8}\n")
            self.assertEqual(request.source_name, str(spec))
        # A one-line str ending in .yaml is a path even when the file is missing.
        with self.assertRaises(SpecError) as missing:
            memaudit_client.validate_request(str(self.dir / "missing.yaml"))
        self.assertEqual(missing.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("missing.yaml: cannot open spec file", missing.exception.message)

    def test_a_file_is_bounded_and_utf8(self):
        big = self.dir / "big.yaml"
        big.write_bytes(b"#" * ((1 << 20) + 10))
        with self.assertRaises(SpecError) as refused:
            memaudit_client.validate_request(big)
        self.assertIn(f"the spec is {(1 << 20) + 10} bytes; at most 1048576", refused.exception.message)
        latin = self.dir / "latin.yaml"
        latin.write_bytes(b"name: caf\xe9\n")
        with self.assertRaises(SpecError) as undecodable:
            memaudit_client.validate_request(latin)
        self.assertIn("not valid UTF-8 at byte 9", undecodable.exception.message)

    def test_text_dicts_and_messages(self):
        request = memaudit_client.validate_request("seed: 3\nmembership: {}\n")
        self.assertEqual((request.yaml, request.source_name), ("seed: 3\nmembership: {}\n", "<string>"))
        self.assertEqual(memaudit_client.validate_request(b"seed: 3\n").yaml, "seed: 3\n")
        tree = {"name": "wider", "seed": 2026, "membership": {"model": {"hidden": [1024]}, "lr": math.inf}}
        request = memaudit_client.validate_request(tree)
        self.assertEqual(request.source_name, "<dict>")
        self.assertEqual(json.loads(request.yaml), tree)  # JSON is YAML
        message = spec_pb2.AuditSpec(name="m", seed=1)
        request = memaudit_client.validate_request(message)
        self.assertEqual(request.WhichOneof("source"), "spec")
        self.assertEqual(request.spec, message)

    def test_what_is_no_spec(self):
        with self.assertRaises(SpecError) as unwritable:
            memaudit_client.validate_request({"membership": {"seed": object()}})
        self.assertIn("<dict>: ", unwritable.exception.message)
        self.assertIn("a spec dict holds str keys and JSON values", unwritable.exception.message)
        with self.assertRaises(SpecError):
            memaudit_client.validate_request({"membership": {("a", "b"): 1}})
        for bad in (7, None, [1, 2], b"\xff"):
            with self.assertRaises((TypeError, SpecError)):
                memaudit_client.validate_request(bad)


class ClientSpecTest(unittest.TestCase):
    """validate and submit against a stand-in stub."""

    def test_validate_answers_the_spec_read_and_its_plan(self):
        read = spec_pb2.AuditSpec(name="tiny", seed=7)
        client = offline_client(Validate=audit_pb2.ValidateResponse(spec=read, tasks=3, steps=2**33))
        validation = client.validate("seed: 7\n")
        self.assertEqual(validation.spec, read)
        self.assertEqual((validation.tasks, validation.steps), (3, 2**33))
        [(method, request)] = client._stub.requests
        self.assertEqual((method, request.yaml, request.source_name), ("Validate", "seed: 7\n", "<string>"))

    def test_a_spec_that_does_not_read_is_a_spec_error(self):
        message = 'x.yaml: 1 unknown field(s):\n  membership.model.hiden: unknown field; did you mean "hidden"?'
        client = offline_client(Validate=FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, message))
        with self.assertRaises(SpecError) as refused:
            client.submit("membership: {model: {hiden: [4]}}")
        self.assertEqual(refused.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(refused.exception.message, message)
        # Nothing submitted.
        self.assertEqual([m for m, _ in client._stub.requests], ["Validate"])

    def test_refused_values_are_a_memaudit_error_with_violations(self):
        refused_values = FakeRpcError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "membership.reference_models: must be an even number (got 7)",
            violations_trailer(("membership.reference_models", "must be an even number (got 7)")),
        )
        client = offline_client(Validate=refused_values)
        with self.assertRaises(MemauditError) as refused:
            client.validate({"membership": {"reference_models": 7}})
        self.assertNotIsInstance(refused.exception, SpecError)
        self.assertEqual([v["field"] for v in refused.exception.violations], ["membership.reference_models"])

        older = offline_client(Validate=FakeRpcError(grpc.StatusCode.UNIMPLEMENTED, "Method not found!"))
        with self.assertRaises(MemauditError) as unimplemented:
            older.validate("seed: 1\n")
        self.assertEqual(unimplemented.exception.code, grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("has no Validate", unimplemented.exception.message)

    def test_submit_sends_what_validate_read_and_a_message_as_it_is(self):
        read = spec_pb2.AuditSpec(name="tiny", seed=7)
        client = offline_client(
            Validate=audit_pb2.ValidateResponse(spec=read, tasks=1),
            Submit=audit_pb2.SubmitResponse(audit_id="a-1", tasks=1),
        )
        self.assertEqual(client.submit("seed: 7\n", request_id="r-1"), "a-1")
        (_, validate), (_, submit) = client._stub.requests
        self.assertEqual(submit.spec, read)
        self.assertEqual(submit.request_id, "r-1")
        client._stub.requests.clear()
        message = spec_pb2.AuditSpec(name="as-is", seed=9)
        self.assertEqual(client.submit_request(message), {"audit_id": "a-1", "tasks": 1})
        [(method, submit)] = client._stub.requests
        self.assertEqual(method, "Submit")
        self.assertEqual(submit.spec, message)
        self.assertTrue(re.fullmatch(r"r-[0-9a-f]{32}", submit.request_id))


class DtypeTest(unittest.TestCase):
    def test_dtypes_follow_the_enum(self):
        self.assertEqual(
            memaudit_client.EXPORT_DTYPES,
            {export_pb2.FLOAT64: "float64", export_pb2.UINT8: "uint8", export_pb2.INT64: "int64"},
        )
        for name, value in export_pb2.ExportDtype.items():
            if value:
                self.assertEqual(memaudit_client.export_dtype(value), name.lower())

    def test_an_unknown_dtype_is_an_error(self):
        for value in (export_pb2.EXPORT_DTYPE_UNSPECIFIED, 99):
            with self.assertRaises(MemauditError) as unknown:
                memaudit_client.export_dtype(value, "phi")
            self.assertEqual(unknown.exception.code, grpc.StatusCode.UNIMPLEMENTED)
            self.assertIn(f"array phi has dtype {value}, which this client does not know", str(unknown.exception))
            self.assertIn("1 (float64)", str(unknown.exception))


@unittest.skipIf(numpy is None, "needs NumPy (python3-numpy)")
class ExportTest(unittest.TestCase):
    PIECES = [
        piece("keep", [2, 3], export_pb2.UINT8, [1, 0, 1, 0], offset=0),
        piece("keep", [2, 3], export_pb2.UINT8, [1, 1], offset=4),
        piece("phi", [2, 3], export_pb2.FLOAT64, [0.5, -1.5, math.inf, 2.0, 3.0, -0.25]),
        piece("target_model", [2], export_pb2.INT64, [0, 1], axes=["target"]),
        piece("score_loss", [2, 3], export_pb2.FLOAT64, [1, 2, 3, 4, 5, 6], axes=["target", "example"]),
        piece("score_rmia", [2, 3], export_pb2.FLOAT64, [6, 5, 4, 3, 2, 1], axes=["target", "example"]),
        piece("score_lira", [2, 3], export_pb2.FLOAT64, [0, 0, 0, 1, 1, 1], axes=["target", "example"]),
    ]

    def test_pieces_become_arrays_of_their_shape_and_dtype(self):
        assembled = {a.name: a for a in arrays_module.assemble(self.PIECES)}
        keep = assembled["keep"].array
        self.assertEqual(keep.dtype, numpy.uint8)
        self.assertEqual(keep.shape, (2, 3))
        self.assertEqual(keep.tolist(), [[1, 0, 1], [0, 1, 1]])
        self.assertEqual(assembled["phi"].array[1, 0], 2.0)
        self.assertEqual(assembled["phi"].array[0, 2], math.inf)
        self.assertEqual(assembled["target_model"].array.dtype, numpy.int64)
        self.assertEqual(assembled["target_model"].axes, ["target"])
        self.assertEqual(assembled["phi"].description, "phi of each element")

    def test_pieces_out_of_order_or_short_are_refused(self):
        for pieces, text in [
            ([piece("keep", [2, 3], export_pb2.UINT8, [1, 1], offset=4)], "a piece of keep out of order"),
            (
                [piece("keep", [2, 3], export_pb2.UINT8, [1, 0]), piece("keep", [2, 3], 2, [1], offset=3)],
                "a piece of keep out of order (offset 3)",
            ),
            ([piece("keep", [2, 3], export_pb2.UINT8, [1, 0, 1])], "keep has 3 values for shape (2, 3)"),
        ]:
            with self.assertRaises(MemauditError) as refused:
                arrays_module.assemble(pieces)
            self.assertEqual(refused.exception.code, grpc.StatusCode.DATA_LOSS)
            self.assertIn(text, refused.exception.message)
        with self.assertRaises(MemauditError) as unknown:
            arrays_module.assemble([piece("new", [1], 42, [1.0])])
        self.assertEqual(unknown.exception.code, grpc.StatusCode.UNIMPLEMENTED)

    def test_client_export_and_its_schema(self):
        client = offline_client(Export=self.PIECES)
        exported = client.export("a-1")
        self.assertEqual(list(exported), ["keep", "phi", "target_model", "score_loss", "score_rmia", "score_lira"])
        self.assertEqual(exported["keep"].dtype, numpy.uint8)
        schema = client.export_arrays("a-1")
        self.assertEqual(
            {k: schema[0][k] for k in ("name", "axes", "shape", "dtype")},
            {"name": "keep", "axes": ["model", "example"], "shape": (2, 3), "dtype": "uint8"},
        )
        # An error in the stream is the call's, with the address.
        failing = offline_client(Export=[self.PIECES[0], FakeRpcError(grpc.StatusCode.UNAVAILABLE, "gone")])
        with self.assertRaises(MemauditError) as lost:
            failing.export("a-1")
        self.assertEqual(lost.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertIn("127.0.0.1:1", lost.exception.message)

    @unittest.skipIf(pandas is None, "needs pandas (python3-pandas)")
    def test_a_frame_per_axes(self):
        assembled = arrays_module.assemble(self.PIECES)
        scores = arrays_module.frame(assembled)  # the axes most arrays share
        self.assertEqual(list(scores.index.names), ["target", "example"])
        self.assertEqual(list(scores.columns), ["score_loss", "score_rmia", "score_lira"])
        self.assertEqual(len(scores), 6)
        self.assertEqual(scores.loc[(1, 0), "score_loss"], 4.0)
        self.assertEqual(scores.loc[(0, 2), "score_rmia"], 4.0)
        models = offline_client(Export=self.PIECES).export_frame("a-1", axes=("model", "example"))
        self.assertEqual(list(models.columns), ["keep", "phi"])
        self.assertEqual(str(models["keep"].dtype), "uint8")
        self.assertEqual(models.loc[(1, 2), "keep"], 1)
        with self.assertRaises(ValueError) as none:
            arrays_module.frame(assembled, axes=("canary",))
        self.assertIn("no array has axes ('canary',)", str(none.exception))

    def test_without_pandas_a_frame_says_how_to_get_it(self):
        client = offline_client(Export=self.PIECES)
        with mock.patch.dict(sys.modules, {"pandas": None}):
            with self.assertRaises(ImportError) as missing:
                client.export_frame("a-1")
        self.assertIn("python3-pandas", str(missing.exception))
        self.assertEqual(client._stub.requests, [])  # asked for nothing

    def test_roc_arrays_from_a_report(self):
        results = results_pb2.AuditResults(audit_id="a-1")
        attack = results.attacks.add(attack=results_pb2.RMIA, auc=0.7)
        for fpr, tpr in [(0.0, 0.0), (0.01, 0.2), (1.0, 1.0)]:
            attack.roc.add(fpr=fpr, tpr=tpr)
        attack.operating_points.add(fpr_target=0.1, tpr=0.4, threshold=math.inf)
        attack.operating_points.add(fpr_target=0.01, tpr=0.2, threshold=1.5)
        for report in (results, to_dict(results)):
            rocs = memaudit_client.roc_arrays(report)
            self.assertEqual(list(rocs), ["RMIA"])
            rmia = rocs["RMIA"]
            self.assertEqual(rmia.fpr.tolist(), [0.0, 0.01, 1.0])
            self.assertEqual(rmia.tpr.tolist(), [0.0, 0.2, 1.0])
            self.assertEqual(rmia.operating_points["fpr_target"].tolist(), [0.1, 0.01])
            self.assertEqual(rmia.operating_points["threshold"].tolist(), [math.inf, 1.5])
        self.assertEqual(memaudit_client.roc_arrays({"attacks": []}), {})


class VersionTest(unittest.TestCase):
    """The package's version is the project's: `memaudit --version`'s."""

    @unittest.skipUnless(os.environ.get("MEMAUDIT_BIN_DIR"), "needs MEMAUDIT_BIN_DIR (build/bin)")
    def test_the_package_and_the_cli_name_one_version(self):
        cli = pathlib.Path(os.environ["MEMAUDIT_BIN_DIR"]) / "memaudit"
        printed = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True)
        match = re.match(r"memaudit (\S+) ", printed.stdout)
        self.assertIsNotNone(match, printed.stdout)
        self.assertEqual(memaudit_client.__version__, match.group(1))
        # The copy the CMake build writes to build/python too.
        build_python = os.environ.get("MEMAUDIT_BUILD_PYTHON")
        if build_python:
            built = subprocess.run(
                ["/usr/bin/python3", "-c", "import memaudit_client; print(memaudit_client.__version__)"],
                env=dict(os.environ, PYTHONPATH=build_python),
                cwd=tempfile.gettempdir(),
                capture_output=True,
                text=True,
                check=True,
            )
            self.assertEqual(built.stdout.strip(), match.group(1))


if __name__ == "__main__":
    unittest.main()
