"""The modules protoc generates from proto/memaudit/v1 (at build time).

The build (`scripts/build.sh`, CMake target `memaudit_python_client`) writes
them to build/python/memaudit/v1/ next to a copy of this package, so one
PYTHONPATH entry (build/python) finds both. They are not kept in the source
tree: they follow the protos they were generated from.
"""

try:
    from memaudit.v1 import audit_pb2, audit_pb2_grpc, export_pb2, results_pb2, spec_pb2
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError(
        "memaudit_client needs the Python modules generated from proto/memaudit/v1 "
        "(memaudit/v1/audit_pb2.py, ...): build them with `scripts/build.sh` (or "
        "`ninja -C build memaudit_python_client`) and put build/python on PYTHONPATH "
        f"(see docs/python-client.md); import failed with: {error}"
    ) from error

__all__ = ["audit_pb2", "audit_pb2_grpc", "export_pb2", "results_pb2", "spec_pb2"]
