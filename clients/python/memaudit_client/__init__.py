"""A Python client of memaudit's gRPC API (docs/python-client.md).

    from memaudit_client import Client

    with Client("memaudit.example.org:7400", ca="certs/ca.crt",
                cert="certs/team-demo.crt", key="certs/team-demo.key") as client:
        audit_id = client.submit("examples/quickstart.yaml")
        final = client.wait(audit_id, on_event=lambda e: print(f"{e.progress:.0%}"))
        report = client.report(audit_id)
        print({a["attack"]: a["auc"] for a in report["attacks"]})
"""

from .arrays import EXPORT_DTYPES, ExportedArray, RocArrays, export_dtype, roc_arrays
from .client import FINAL_STATES, AuditRef, Client, Event, Validation, new_request_id
from .convert import to_dict, to_json
from .diff import MetricChange, Reading, regressions
from .errors import MemauditError, SpecError
from .gates import GateVerdict, gate_verdicts
from .spec import SpecLike, validate_request

try:
    # Written when the package is built (setup.py; the CMake build), from the
    # project's version in the top-level CMakeLists.txt: `memaudit --version`'s.
    from ._version import __version__
except ImportError as error:  # pragma: no cover - a source tree never built
    raise ImportError(
        "memaudit_client/_version.py is written when the package is built: install it "
        "(pip install --no-build-isolation ./clients/python) or build build/python "
        "(ninja -C build memaudit_python_client)"
    ) from error

__all__ = [
    "AuditRef",
    "Client",
    "EXPORT_DTYPES",
    "Event",
    "ExportedArray",
    "FINAL_STATES",
    "GateVerdict",
    "MemauditError",
    "MetricChange",
    "Reading",
    "RocArrays",
    "SpecError",
    "SpecLike",
    "Validation",
    "__version__",
    "export_dtype",
    "gate_verdicts",
    "new_request_id",
    "regressions",
    "roc_arrays",
    "to_dict",
    "to_json",
    "validate_request",
]
