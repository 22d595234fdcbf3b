"""The exceptions the client raises."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import grpc


class MemauditError(Exception):
    """A call the services refused or could not answer, or a spec that could
    not be read.

    code: the `grpc.StatusCode` (INVALID_ARGUMENT: fix the request, the field is
    named in the message; NOT_FOUND: no such audit, or another team's;
    FAILED_PRECONDITION: fix the state first; UNAVAILABLE: retry;
    UNAUTHENTICATED / PERMISSION_DENIED: credentials; RESOURCE_EXHAUSTED: a
    quota). message: the server's explanation.

    details: the structured details the server attached to the error (the
    `grpc-status-details-bin` trailer, memaudit.v1.ErrorStatus), each a dict
    with its "@type"; violations: the (field, description) problems among
    them (a spec refused by validation: {"field": "membership.reference_models",
    "description": "must be an even number ..."}). Both empty when the
    server sent none.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        details: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.details: List[Dict[str, Any]] = details or []

    @property
    def violations(self) -> List[Dict[str, Any]]:
        return [v for d in self.details for v in d.get("violations", [])]

    @classmethod
    def from_rpc_error(cls, error: object, address: Optional[str] = None) -> "MemauditError":
        """The exception for a `grpc.RpcError` raised by a call to `address`
        (any object with `code()`, `details()` and `trailing_metadata()`, as
        a failed `grpc.Call` has; what it lacks reads as UNKNOWN and empty)."""
        code_of = getattr(error, "code", None)
        code = code_of() if callable(code_of) else grpc.StatusCode.UNKNOWN
        if not isinstance(code, grpc.StatusCode):
            code = grpc.StatusCode.UNKNOWN
        details_of = getattr(error, "details", None)
        message = details_of() if callable(details_of) else str(error)
        message = message or ""
        if address and code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            message = f"coordinator at {address} is not reachable ({message})"
        return cls(code, message, status_details(error))


def status_details(error: object) -> List[Dict[str, Any]]:
    """The details of the error's `grpc-status-details-bin` trailer
    (memaudit.v1.ErrorStatus) as dicts; empty when it has none or they do
    not decode."""
    trailer = getattr(error, "trailing_metadata", None)
    metadata = (trailer() if callable(trailer) else None) or ()
    blobs = [value for key, value in metadata if key == "grpc-status-details-bin"]
    if not blobs:
        return []
    try:
        from ._proto import errors_pb2
        from .convert import to_dict

        status = errors_pb2.ErrorStatus.FromString(blobs[0])
        details: List[Dict[str, Any]] = to_dict(status).get("details", [])
        return details
    except Exception:  # noqa: BLE001 - details are extra; the code and message stand
        return []


class SpecError(MemauditError, ValueError):
    """A spec that does not read as an AuditSpec: not YAML, an unknown or
    duplicate key, a value of the wrong type, a limit passed (code
    INVALID_ARGUMENT; the message names the source, the place and the field,
    as `memaudit submit` does), or a spec file that cannot be opened
    (NOT_FOUND). A spec that reads but whose values the coordinator refuses
    is a plain MemauditError INVALID_ARGUMENT with its `violations`."""

    def __init__(
        self,
        message: str,
        code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT,
        details: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(code, message, details)
