"""The exceptions the client raises."""

import grpc


class MemauditError(Exception):
    """A call the services refused or could not answer, or a spec the client
    refused before sending it.

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

    def __init__(self, code, message, details=None):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.details = details or []

    @property
    def violations(self):
        return [v for d in self.details for v in d.get("violations", [])]

    @classmethod
    def from_rpc_error(cls, error, address=None):
        """The exception for a `grpc.RpcError` raised by a call to `address`."""
        code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
        message = error.details() if callable(getattr(error, "details", None)) else str(error)
        message = message or ""
        if address and code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            message = f"coordinator at {address} is not reachable ({message})"
        return cls(code, message, _status_details(error))


def _status_details(error):
    """The details of the `grpc-status-details-bin` trailer as dicts."""
    trailer = getattr(error, "trailing_metadata", None)
    metadata = (trailer() if callable(trailer) else None) or ()
    blobs = [value for key, value in metadata if key == "grpc-status-details-bin"]
    if not blobs:
        return []
    try:
        from memaudit.v1 import errors_pb2  # generated only where the protos have it
        from .convert import to_dict

        status = errors_pb2.ErrorStatus.FromString(blobs[0])
        return to_dict(status).get("details", [])
    except Exception:  # noqa: BLE001 - details are extra; the code and message stand
        return []


class SpecError(MemauditError, ValueError):
    """A spec that cannot become an AuditSpec (code INVALID_ARGUMENT, or
    NOT_FOUND for a spec file that cannot be opened): the message names the
    source and the field, as `memaudit validate` does."""

    def __init__(self, message, code=grpc.StatusCode.INVALID_ARGUMENT):
        super().__init__(code, message)
