"""A client of memaudit's AuditService (proto/memaudit/v1/audit.proto)."""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import grpc
from google.protobuf import json_format

from . import arrays
from ._proto import audit_pb2, audit_pb2_grpc, export_pb2, results_pb2, spec_pb2
from .convert import to_dict, to_json
from .diff import MetricChange, changes_from_proto
from .errors import MemauditError, SpecError
from .spec import SpecLike, validate_request

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray
    import pandas
    from google.protobuf.message import Message

PathLike = Union[str, "os.PathLike[str]"]
# One side of `Client.diff`: an audit id, an archived results.json, or the
# results as `Client.report` returns them.
AuditRef = Union[str, "os.PathLike[str]", Mapping[str, Any]]
_Response = TypeVar("_Response")

# The services' message size limit (common/security/tls.h): an audit with its
# results can be larger than gRPC's default 4 MiB.
MAX_MESSAGE_BYTES = 256 << 20
# Deadline of one unary call, as the CLI's.
CALL_TIMEOUT_S = 30.0
# Deadline of an export: the scorer recomputes every score, as the CLI's.
EXPORT_TIMEOUT_S = 600.0
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
    audit: Dict[str, Any]
    raw: Optional["Message"] = dataclasses.field(repr=False, compare=False, default=None)

    @property
    def state(self) -> str:
        """The state in the audit's snapshot sent with the event: "QUEUED",
        "RUNNING", "SUCCEEDED", "FAILED" or "CANCELLED". (Events replayed
        from an earlier sequence carry the audit as it is now.)"""
        return str(self.audit.get("state", ""))

    @property
    def finished(self) -> bool:
        """Whether this is the event that ends the audit ("audit_succeeded",
        "audit_failed", "audit_cancelled"); nothing follows it."""
        return self.type.lower().endswith(_FINAL_EVENTS)

    @property
    def tasks_done(self) -> int:
        tasks = self.audit.get("tasks", {})
        return sum(int(tasks.get(k, 0)) for k in ("succeeded", "failed", "cancelled"))

    @property
    def tasks_total(self) -> int:
        return int(self.audit.get("tasks", {}).get("total", 0))

    @property
    def steps_done(self) -> int:
        return int(self.audit.get("steps_done", 0))

    @property
    def steps_total(self) -> int:
        return int(self.audit.get("steps_total", 0))

    @property
    def progress(self) -> float:
        """Training done, from 0 to 1: steps when the plan counts them, else tasks."""
        if self.steps_total:
            return min(1.0, self.steps_done / self.steps_total)
        if self.tasks_total:
            return self.tasks_done / self.tasks_total
        return 1.0 if self.finished else 0.0

    @classmethod
    def from_proto(cls, event: "Message") -> "Event":
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


@dataclasses.dataclass(frozen=True)
class Validation:
    """The coordinator's reading of a spec (Client.validate).

    spec: the AuditSpec as read, before defaults: what Submit is sent.
    tasks: the tasks the audit would be planned into; steps: their training
    steps (the audit's steps_total).
    """

    spec: "spec_pb2.AuditSpec"
    tasks: int
    steps: int


def _diff_side(ref: AuditRef) -> "Message":
    """An audit id, a results.json path or a report dict as a DiffSide."""
    if isinstance(ref, Mapping):
        results = json_format.ParseDict(ref, results_pb2.AuditResults())
        return audit_pb2.DiffSide(results=results)
    # As the CLI tells them apart: an audit id has no "/" and no ".".
    if not isinstance(ref, str) or "/" in ref or "." in ref:
        text = _read(ref, "results file").decode("utf-8")
        return audit_pb2.DiffSide(results=json_format.Parse(text, results_pb2.AuditResults()))
    return audit_pb2.DiffSide(audit_id=ref)


def new_request_id() -> str:
    """A fresh idempotency key for Submit ("r-" and 32 hex digits), as the CLI's."""
    return "r-" + secrets.token_hex(16)


def _read(path: PathLike, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as error:
        raise MemauditError(
            grpc.StatusCode.INVALID_ARGUMENT, f"{what}: cannot read {path!r} ({error.strerror})"
        ) from None


def _token_from_file(path: PathLike) -> str:
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
        address: str = "127.0.0.1:7400",
        ca: Optional[PathLike] = None,
        cert: Optional[PathLike] = None,
        key: Optional[PathLike] = None,
        token: Optional[str] = None,
        token_file: Optional[PathLike] = None,
        insecure: bool = False,
        timeout: float = CALL_TIMEOUT_S,
    ) -> None:
        self.address = address
        self.timeout = timeout
        if token is None and token_file is not None:
            token = _token_from_file(token_file)
        options: List[Tuple[str, Any]] = [
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
    def from_env(cls, address: Optional[str] = None, **kwargs: Any) -> "Client":
        """A client configured as the memaudit CLI is from its environment:
        MEMAUDIT_COORDINATOR (default 127.0.0.1:7400), MEMAUDIT_TLS_CA,
        MEMAUDIT_TLS_CERT, MEMAUDIT_TLS_KEY, MEMAUDIT_TOKEN,
        MEMAUDIT_TOKEN_FILE and MEMAUDIT_INSECURE=1. Keyword arguments win."""
        env = os.environ
        settings: Dict[str, Any] = {
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

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self, method: Callable[..., _Response], request: "Message", timeout: Optional[float] = None
    ) -> _Response:
        try:
            return method(request, timeout=timeout or self.timeout)
        except grpc.RpcError as error:
            raise MemauditError.from_rpc_error(error, self.address) from None

    # -- AuditService -----------------------------------------------------

    def validate(self, spec: SpecLike) -> Validation:
        """The coordinator's reading of `spec` (see `submit` for what a spec
        may be), checked as Submit checks it and planned, with nothing
        stored: the AuditSpec as read, and the tasks and training steps it
        would be planned into.

        Raises SpecError (INVALID_ARGUMENT) for a spec that does not read as
        an AuditSpec (the message names the source, the place and the
        field, as `memaudit submit` does; NOT_FOUND for a file that cannot
        be opened), and MemauditError INVALID_ARGUMENT for one whose values
        the coordinator refuses, naming each field (`violations`), exactly
        as Submit would."""
        request = validate_request(spec)
        try:
            response = self._call(self._stub.Validate, request)
        except MemauditError as error:
            if error.code == grpc.StatusCode.INVALID_ARGUMENT and not error.violations:
                # Not read, or out of bounds: the coordinator names no field
                # problems (audit.proto, ValidateRequest).
                raise SpecError(error.message, details=error.details) from None
            if error.code == grpc.StatusCode.UNIMPLEMENTED:
                raise MemauditError(
                    error.code,
                    f"the coordinator at {self.address} has no Validate (it is older than "
                    "this client): update it, or submit an AuditSpec message "
                    f"({error.message})",
                ) from None
            raise
        return Validation(spec=response.spec, tasks=int(response.tasks), steps=int(response.steps))

    def submit_request(
        self, spec: SpecLike, request_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """Submits `spec` (see `submit`); returns the SubmitResponse as a dict
        ({"audit_id": ..., "tasks": ...})."""
        request = audit_pb2.SubmitRequest(request_id=request_id or new_request_id())
        if isinstance(spec, spec_pb2.AuditSpec):
            request.spec.CopyFrom(spec)
        else:
            request.spec.CopyFrom(self.validate(spec).spec)
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

    def submit(self, spec: SpecLike, request_id: Optional[str] = None) -> str:
        """Submits an audit; returns its id.

        spec: a dict (the YAML's structure), YAML text, a path to a YAML file
        (`pathlib.Path`, or a one-line str naming a file or ending in .yaml),
        or an AuditSpec message. All but a message are first read by the
        coordinator's Validate, exactly as `memaudit submit` reads a file
        (`validate`), and the AuditSpec it answers is submitted; a message
        is submitted as it is. A spec that does not read raises SpecError
        (INVALID_ARGUMENT) and nothing is submitted; one whose values the
        coordinator refuses raises MemauditError INVALID_ARGUMENT naming the
        field.

        request_id: an idempotency key (at most 128 printable ASCII
        characters): a Submit resent with the same key and spec returns the
        same audit. Default: a random one, used for one automatic resend
        when the answer is lost (UNAVAILABLE, DEADLINE_EXCEEDED).
        """
        return str(self.submit_request(spec, request_id)["audit_id"])

    def get(self, audit_id: str) -> Dict[str, Any]:
        """The audit (memaudit.v1.Audit) as a dict: state ("QUEUED", "RUNNING",
        "SUCCEEDED", "FAILED", "CANCELLED"), tasks, steps_done, steps_total,
        error, spec, team, ..."""
        return to_dict(self._call(self._stub.Get, audit_pb2.GetRequest(audit_id=audit_id)))

    def _list_request(self, limit: int, filters: Dict[str, Any]) -> "Message":
        request = audit_pb2.ListRequest()
        try:
            json_format.ParseDict(dict(filters, limit=limit), request)
        except json_format.ParseError as error:
            raise TypeError(f"list: {error}") from None
        return request

    def list(self, limit: int = 0, **filters: Any) -> List[Dict[str, Any]]:
        """The caller's audits (an administrator's: everyone's), most recent
        first, as dicts like `get`'s: one answer of up to `limit` (0 = the
        coordinator's default, 100).

        filters: further fields of memaudit.v1.ListRequest by name, as the
        coordinator knows them (e.g. state="RUNNING", kind="MEMBERSHIP",
        name_contains="sweep", page_token=...); a name ListRequest lacks is
        a TypeError."""
        response = self._call(self._stub.List, self._list_request(limit, filters))
        audits: List[Dict[str, Any]] = to_dict(response).get("audits", [])
        return audits

    def list_all(self, limit: int = 0, **filters: Any) -> Iterator[Dict[str, Any]]:
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

    def cancel(self, audit_id: str) -> Dict[str, Any]:
        """Cancels the audit (workers drop its tasks); returns it as a dict.
        Cancelling an audit that already ended changes nothing."""
        return to_dict(self._call(self._stub.Cancel, audit_pb2.CancelRequest(audit_id=audit_id)))

    def watch(
        self, audit_id: str, after_sequence: int = 0, timeout: Optional[float] = None
    ) -> Iterator[Event]:
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

    def wait(
        self,
        audit_id: str,
        on_event: Optional[Callable[[Event], object]] = None,
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Watches the audit until it ends; returns its final state as `get`
        does. on_event: called with each `Event` (e.g. to show progress).
        timeout: seconds; past it, MemauditError DEADLINE_EXCEEDED (the audit
        goes on)."""
        for event in self.watch(audit_id, timeout=timeout):
            if on_event is not None:
                on_event(event)
        return self.get(audit_id)

    def report_message(self, audit_id: str) -> "Message":
        """The scored results as the memaudit.v1.AuditResults message."""
        return self._call(
            self._stub.GetReport, audit_pb2.GetReportRequest(audit_id=audit_id)
        )

    def report(self, audit_id: str, json_path: Optional[PathLike] = None) -> Dict[str, Any]:
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

    def diff(self, old: AuditRef, new: AuditRef) -> List[MetricChange]:
        """Two complete audits of one kind compared metric by metric, as
        `memaudit diff` compares them: every metric a gate may name, each
        side's value with its interval, new - old with its interval, and
        which changes are significant (`memaudit_client.regressions` keeps
        the worse ones). Each side is an audit id this team may read, the
        path of an archived results.json (`memaudit run`'s, or
        `report(json_path=...)`'s), or a report dict. Raises MemauditError
        INVALID_ARGUMENT naming the side (old_audit, new_audit) when it is
        not complete results of the other's kind."""
        request = audit_pb2.DiffRequest(old_audit=_diff_side(old), new_audit=_diff_side(new))
        return changes_from_proto(self._call(self._stub.Diff, request))

    def export(self, audit_id: str, timeout: Optional[float] = None) -> Dict[str, "NDArray[Any]"]:
        """The audit's per-example data (docs/export.md) as a dict from array
        name to numpy.ndarray, each with the shape and dtype the export
        states, e.g. {"keep": uint8[models, examples], "phi": ...,
        "score_lira_online": float64[targets, examples]}. Raises
        MemauditError FAILED_PRECONDITION before the audit is scored, and
        UNIMPLEMENTED for an array of a dtype this client does not know.
        Needs NumPy."""
        return {a.name: a.array for a in self._export(audit_id, timeout)}

    def export_arrays(
        self, audit_id: str, timeout: Optional[float] = None
    ) -> List[Dict[str, Any]]:
        """As `export`, each array with its schema: a list of dicts with
        name, axes, shape, dtype, description and array (numpy.ndarray)."""
        return [a.as_dict() for a in self._export(audit_id, timeout)]

    def export_frame(
        self,
        audit_id: str,
        axes: Optional[Sequence[str]] = None,
        timeout: Optional[float] = None,
    ) -> "pandas.DataFrame":
        """The export's arrays over exactly `axes` as a pandas DataFrame: one
        row per element, indexed by its position on each axis (a MultiIndex
        named after the axes), one column per array. A membership audit's
        ("target", "example") gives score_lira_online, score_rmia, ...;
        ("model", "example") keep, phi and loss. axes: None for the axes
        most arrays share. Needs pandas (ImportError naming it otherwise);
        ValueError when no array has these axes."""
        arrays.require_pandas()  # before the export is asked for
        return arrays.frame(self._export(audit_id, timeout), axes)

    def _export(self, audit_id: str, timeout: Optional[float]) -> List[arrays.ExportedArray]:
        arrays.require_numpy()  # before the export is asked for
        request = export_pb2.ExportRequest(audit_id=audit_id)
        stream = self._stub.Export(request, timeout=timeout or EXPORT_TIMEOUT_S)
        try:
            return arrays.assemble(stream)
        except grpc.RpcError as error:
            raise MemauditError.from_rpc_error(error, self.address) from None
        finally:
            stream.cancel()  # nothing more is read (a no-op once it ended)
