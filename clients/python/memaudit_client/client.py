"""A client of memaudit's AuditService (proto/memaudit/v1/audit.proto)."""

import dataclasses
import os
import secrets
import time

import grpc
from google.protobuf import json_format

from ._proto import audit_pb2, audit_pb2_grpc, export_pb2
from .convert import to_dict, to_json
from .errors import MemauditError
from .spec import to_spec

# The services' message size limit (common/serving.h): an audit with its
# results can be larger than gRPC's default 4 MiB.
MAX_MESSAGE_BYTES = 256 << 20
# Deadline of one unary call, as the CLI's.
CALL_TIMEOUT_S = 30.0
# Deadline of an export: the scorer recomputes every score, as the CLI's.
EXPORT_TIMEOUT_S = 600.0
# NumPy's type of each ExportDtype.
_EXPORT_DTYPES = {1: "float64", 2: "uint8", 3: "int64"}
# How long a dropped Watch is resumed for without news, as the CLI's.
WATCH_RECONNECT_S = 30.0

# Audit states after which nothing changes.
FINAL_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")
# Event types that end an audit.
_FINAL_EVENTS = ("audit_succeeded", "audit_failed", "audit_cancelled")


@dataclasses.dataclass
class Event:
    """One progress event of an audit (memaudit.v1.AuditEvent).

    audit: the audit's snapshot sent with the event, as `Client.get` returns it.
    raw: the AuditEvent message itself.
    """

    sequence: int
    audit_id: str
    unix_ms: int
    type: str
    task_id: str
    message: str
    audit: dict
    raw: object = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def state(self):
        """The state in the audit's snapshot sent with the event: "QUEUED",
        "RUNNING", "SUCCEEDED", "FAILED" or "CANCELLED". (Events replayed
        from an earlier sequence carry the audit as it is now.)"""
        return self.audit.get("state", "")

    @property
    def finished(self):
        """Whether this is the event that ends the audit ("audit_succeeded",
        "audit_failed", "audit_cancelled"); nothing follows it."""
        return self.type.lower().endswith(_FINAL_EVENTS)

    @property
    def tasks_done(self):
        tasks = self.audit.get("tasks", {})
        return sum(tasks.get(k, 0) for k in ("succeeded", "failed", "cancelled"))

    @property
    def tasks_total(self):
        return self.audit.get("tasks", {}).get("total", 0)

    @property
    def steps_done(self):
        return self.audit.get("steps_done", 0)

    @property
    def steps_total(self):
        return self.audit.get("steps_total", 0)

    @property
    def progress(self):
        """Training done, from 0 to 1: steps when the plan counts them, else tasks."""
        if self.steps_total:
            return min(1.0, self.steps_done / self.steps_total)
        if self.tasks_total:
            return self.tasks_done / self.tasks_total
        return 1.0 if self.finished else 0.0

    @classmethod
    def from_proto(cls, event):
        data = to_dict(event)
        return cls(
            sequence=data.get("sequence", 0),
            audit_id=data.get("audit_id", ""),
            unix_ms=data.get("unix_ms", 0),
            type=str(data.get("type", "")),
            task_id=data.get("task_id", ""),
            message=data.get("message", ""),
            audit=data.get("audit", {}),
            raw=event,
        )


def new_request_id():
    """A fresh idempotency key for Submit ("r-" and 32 hex digits), as the CLI's."""
    return "r-" + secrets.token_hex(16)


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as error:
        raise MemauditError(
            grpc.StatusCode.INVALID_ARGUMENT, f"{what}: cannot read {path!r} ({error.strerror})"
        ) from None


def _token_from_file(path):
    token = _read(path, "token_file").decode("utf-8", "replace").strip()
    if not token or len(token) > 4096:
        raise MemauditError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"token_file: {path!r} must hold one token of 1 to 4096 bytes",
        )
    return token


class Client:
    """A connection to a memaudit coordinator.

    Credentials, as docs/security.md describes them:

    * mutual TLS: `ca` (the CA the coordinator's certificate chains to) and
      the caller's `cert` and `key` (PEM files; the certificate's OU is the
      role, "team" or "admin", its CN the name);
    * a bearer token over TLS: `ca` and `token` (or `token_file`); sent as
      `authorization: Bearer TOKEN` on every call;
    * `insecure=True`: plain text to a coordinator started with `--insecure`
      (every caller is then an administrator; a token is not sent).

    Every method raises `MemauditError` (with the gRPC status code) when the
    coordinator refuses the call or cannot be reached. The client is a
    context manager; `close()` ends the connection.
    """

    def __init__(
        self,
        address="127.0.0.1:7400",
        ca=None,
        cert=None,
        key=None,
        token=None,
        token_file=None,
        insecure=False,
        timeout=CALL_TIMEOUT_S,
    ):
        self.address = address
        self.timeout = timeout
        if token is None and token_file is not None:
            token = _token_from_file(token_file)
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ]
        if insecure:
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            if ca is None:
                raise MemauditError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "ca: the CA certificate the coordinator's certificate chains to is "
                    "required (or insecure=True for a coordinator started with --insecure)",
                )
            if (cert is None) != (key is None):
                raise MemauditError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "cert and key: give both (mutual TLS) or neither (a token)",
                )
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(ca, "ca"),
                private_key=_read(key, "key") if key else None,
                certificate_chain=_read(cert, "cert") if cert else None,
            )
            if token:
                credentials = grpc.composite_channel_credentials(
                    credentials, grpc.access_token_call_credentials(token)
                )
            self._channel = grpc.secure_channel(address, credentials, options=options)
        self._stub = audit_pb2_grpc.AuditServiceStub(self._channel)

    @classmethod
    def from_env(cls, address=None, **kwargs):
        """A client configured as the memaudit CLI is from its environment:
        MEMAUDIT_COORDINATOR (default 127.0.0.1:7400), MEMAUDIT_TLS_CA,
        MEMAUDIT_TLS_CERT, MEMAUDIT_TLS_KEY, MEMAUDIT_TOKEN,
        MEMAUDIT_TOKEN_FILE and MEMAUDIT_INSECURE=1. Keyword arguments win."""
        env = os.environ
        settings = {
            "ca": env.get("MEMAUDIT_TLS_CA") or None,
            "cert": env.get("MEMAUDIT_TLS_CERT") or None,
            "key": env.get("MEMAUDIT_TLS_KEY") or None,
            "token": env.get("MEMAUDIT_TOKEN") or None,
            "token_file": env.get("MEMAUDIT_TOKEN_FILE") or None,
            "insecure": env.get("MEMAUDIT_INSECURE") == "1",
        }
        settings.update(kwargs)
        address = address or env.get("MEMAUDIT_COORDINATOR") or "127.0.0.1:7400"
        return cls(address, **settings)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request, timeout=None):
        try:
            return method(request, timeout=timeout or self.timeout)
        except grpc.RpcError as error:
            raise MemauditError.from_rpc_error(error, self.address) from None

    # -- AuditService -----------------------------------------------------

    def submit_request(self, spec, request_id=None):
        """Submits `spec` (see `submit`); returns the SubmitResponse as a dict
        ({"audit_id": ..., "tasks": ...})."""
        request = audit_pb2.SubmitRequest(request_id=request_id or new_request_id())
        request.spec.CopyFrom(to_spec(spec))
        try:
            response = self._call(self._stub.Submit, request)
        except MemauditError as error:
            # The answer may have been lost: resend once with the same key,
            # which returns the audit the first Submit created, if it did.
            if error.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise
            time.sleep(1.0)
            response = self._call(self._stub.Submit, request)
        return to_dict(response)

    def submit(self, spec, request_id=None):
        """Submits an audit; returns its id.

        spec: a dict (the YAML's structure), YAML text, a path to a YAML file
        (`pathlib.Path`, or a one-line str naming a file or ending in .yaml),
        or an AuditSpec message. Read as `memaudit submit` reads a file
        (memaudit_client.spec). A spec the client cannot read raises
        SpecError (INVALID_ARGUMENT) before anything is sent; one the
        coordinator refuses raises MemauditError INVALID_ARGUMENT naming the
        field.

        request_id: an idempotency key (at most 128 printable ASCII
        characters): a Submit resent with the same key and spec returns the
        same audit. Default: a random one, used for one automatic resend
        when the answer is lost (UNAVAILABLE, DEADLINE_EXCEEDED).
        """
        return self.submit_request(spec, request_id)["audit_id"]

    def get(self, audit_id):
        """The audit (memaudit.v1.Audit) as a dict: state ("QUEUED", "RUNNING",
        "SUCCEEDED", "FAILED", "CANCELLED"), tasks, steps_done, steps_total,
        error, spec, team, ..."""
        return to_dict(self._call(self._stub.Get, audit_pb2.GetRequest(audit_id=audit_id)))

    def _list_request(self, limit, filters):
        request = audit_pb2.ListRequest()
        try:
            json_format.ParseDict(dict(filters, limit=limit), request)
        except json_format.ParseError as error:
            raise TypeError(f"list: {error}") from None
        return request

    def list(self, limit=0, **filters):
        """The caller's audits (an administrator's: everyone's), most recent
        first, as dicts like `get`'s: one answer of up to `limit` (0 = the
        coordinator's default, 100).

        filters: further fields of memaudit.v1.ListRequest by name, as the
        coordinator knows them (e.g. state="RUNNING", kind="MEMBERSHIP",
        name_contains="sweep", page_token=...); a name ListRequest lacks is
        a TypeError."""
        response = self._call(self._stub.List, self._list_request(limit, filters))
        return to_dict(response).get("audits", [])

    def list_all(self, limit=0, **filters):
        """Yields every audit `list` would, following the coordinator's pages
        (ListResponse.next_page_token) where it answers in pages; `limit` is
        the page size."""
        filters = dict(filters)
        while True:
            response = to_dict(self._call(self._stub.List, self._list_request(limit, filters)))
            yield from response.get("audits", [])
            token = response.get("next_page_token")
            if not token:
                return
            filters["page_token"] = token

    def cancel(self, audit_id):
        """Cancels the audit (workers drop its tasks); returns it as a dict.
        Cancelling an audit that already ended changes nothing."""
        return to_dict(self._call(self._stub.Cancel, audit_pb2.CancelRequest(audit_id=audit_id)))

    def watch(self, audit_id, after_sequence=0, timeout=None):
        """Yields the audit's events (`Event`) from `after_sequence` on, until
        the one that ends it. A stream that drops (a coordinator restarting)
        is resumed from the last event, for up to 30 s without news.
        timeout: seconds for the whole watch; past it, MemauditError
        DEADLINE_EXCEEDED (the audit goes on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        after = after_sequence
        give_up = time.monotonic() + WATCH_RECONNECT_S
        backoff = 0.1
        while True:
            request = audit_pb2.WatchRequest(audit_id=audit_id, after_sequence=after)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            stream = self._stub.Watch(request, timeout=left)
            try:
                for message in stream:
                    event = Event.from_proto(message)
                    after = event.sequence
                    give_up = time.monotonic() + WATCH_RECONNECT_S
                    backoff = 0.1
                    yield event
                    if event.finished:
                        return
                return
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE:
                    raise MemauditError.from_rpc_error(error) from None
                if time.monotonic() + backoff >= give_up:
                    raise MemauditError(
                        grpc.StatusCode.UNAVAILABLE, f"lost the coordinator at {self.address}"
                    ) from None
                time.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
            finally:
                stream.cancel()

    def wait(self, audit_id, on_event=None, timeout=None):
        """Watches the audit until it ends; returns its final state as `get`
        does. on_event: called with each `Event` (e.g. to show progress).
        timeout: seconds; past it, MemauditError DEADLINE_EXCEEDED (the audit
        goes on)."""
        for event in self.watch(audit_id, timeout=timeout):
            if on_event is not None:
                on_event(event)
        return self.get(audit_id)

    def report_message(self, audit_id):
        """The scored results as the memaudit.v1.AuditResults message."""
        return self._call(
            self._stub.GetReport, audit_pb2.GetReportRequest(audit_id=audit_id)
        )

    def report(self, audit_id, json_path=None):
        """The scored results (memaudit.v1.AuditResults) as a dict keyed by
        proto field names, every primitive field present, as
        docs/results.md describes them (64-bit integers as int, non-finite
        numbers as float). json_path: also write the results there in
        protobuf's JSON mapping, as `memaudit report --json` does."""
        results = self.report_message(audit_id)
        if json_path is not None:
            with open(json_path, "w", encoding="utf-8") as f:
                f.write(to_json(results))
        return to_dict(results)

    def export(self, audit_id, timeout=None):
        """The audit's per-example data (docs/export.md) as a dict from array
        name to numpy.ndarray, each with the shape and dtype the export
        states, e.g. {"keep": uint8[models, examples], "phi": ...,
        "score_lira_online": float64[targets, examples]}. Raises
        MemauditError FAILED_PRECONDITION before the audit is scored."""
        return {a["name"]: a["array"] for a in self.export_arrays(audit_id, timeout)}

    def export_arrays(self, audit_id, timeout=None):
        """As `export`, each array with its schema: a list of dicts with
        name, axes, shape, dtype, description and array (numpy.ndarray)."""
        import numpy  # only exports need it (Debian: python3-numpy)

        request = export_pb2.ExportRequest(audit_id=audit_id)
        out = []
        try:
            for piece in self._stub.Export(request, timeout=timeout or EXPORT_TIMEOUT_S):
                if piece.offset == 0:
                    out.append(
                        {
                            "name": piece.name,
                            "axes": list(piece.axes),
                            "shape": tuple(piece.shape),
                            "dtype": _EXPORT_DTYPES.get(piece.dtype, "float64"),
                            "description": piece.description,
                            "values": [],
                        }
                    )
                elif not out or out[-1]["name"] != piece.name:
                    raise MemauditError(
                        grpc.StatusCode.INTERNAL, f"export: a piece of {piece.name} out of order"
                    )
                out[-1]["values"].append(numpy.array(piece.values, dtype=numpy.float64))
        except grpc.RpcError as error:
            raise MemauditError.from_rpc_error(error, self.address) from None
        for a in out:
            values = numpy.concatenate(a.pop("values")) if a["values"] else numpy.zeros(0)
            a["array"] = values.astype(a["dtype"]).reshape(a["shape"])
        return out
