"""The modules protoc generates from proto/memaudit/v1.

They are generated when the package is built, never kept in the source
tree, so they follow the protos: `pip install ./clients/python` generates
them into the installed distribution (package `memaudit.v1`, beside
`memaudit_client`), and the CMake build (`scripts/build.sh`, target
`memaudit_python_client`) into build/python/ next to a copy of this package.
"""

try:
    from memaudit.v1 import (
        audit_pb2,
        audit_pb2_grpc,
        errors_pb2,
        export_pb2,
        results_pb2,
        spec_pb2,
    )
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "memaudit_client needs the Python modules generated from proto/memaudit/v1 "
        "(memaudit/v1/audit_pb2.py, ...): install the package with "
        "`pip install --no-build-isolation ./clients/python`, or build them with "
        "`scripts/build.sh` (or `ninja -C build memaudit_python_client`) and put "
        f"build/python on PYTHONPATH (see docs/python-client.md); import failed with: {error}"
    ) from error

__all__ = ["audit_pb2", "audit_pb2_grpc", "errors_pb2", "export_pb2", "results_pb2", "spec_pb2"]
