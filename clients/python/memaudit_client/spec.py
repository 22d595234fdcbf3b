"""What `Client.submit` and `Client.validate` accept as a spec, as the
request that carries it to the coordinator.

The client does not read specs itself: YAML goes to the coordinator's
`Validate` (proto/memaudit/v1/audit.proto), which reads it exactly as
`memaudit submit` reads a spec file (common/messages/spec_yaml.h) and checks it as
Submit does, so a spec means the same from Python as from the CLI. Here a
spec only becomes a `ValidateRequest`:

* a path (`os.PathLike`, or a one-line str naming a file or ending in .yaml,
  .yml or .json): the file's text, with the path as its source name (error
  messages name it; a spec without `name` is named after its stem);
* any other str (or bytes): YAML text, source "<string>";
* a mapping (the YAML's structure as Python values): written as JSON, which is
  YAML, source "<dict>";
* a `memaudit.v1.AuditSpec` message: as it is.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Union

import grpc

from ._proto import audit_pb2, spec_pb2
from .errors import SpecError

# The coordinator's bound on ValidateRequest.yaml, a spec file's (docs/spec.md).
MAX_SPEC_BYTES = 1 << 20
# A one-line str up to this long that names a file (or ends in a spec
# file's suffix) is a path.
_MAX_PATH_CHARS = 4096

# What a spec may be given as.
SpecLike = Union["spec_pb2.AuditSpec", Mapping[str, Any], str, bytes, "os.PathLike[str]"]


def _read_file(path: str) -> str:
    """The text of the spec file at `path`, at most MAX_SPEC_BYTES."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_SPEC_BYTES + 1)
    except OSError as error:
        raise SpecError(
            f"{path}: cannot open spec file ({error.strerror})", code=grpc.StatusCode.NOT_FOUND
        ) from None
    if len(head) > MAX_SPEC_BYTES:
        size = os.path.getsize(path)
        raise SpecError(
            f"{path}: the spec is {size} bytes; at most {MAX_SPEC_BYTES} are read "
            "(put large text in a file: corpus.path)"
        )
    return _decode(head, path)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(f"{source}: not valid UTF-8 at byte {error.start}") from None


def _looks_like_path(text: str) -> bool:
    if "\n" in text or len(text) > _MAX_PATH_CHARS:
        return False
    return text.endswith((".yaml", ".yml", ".json")) or os.path.isfile(text)


def _yaml_request(text: str, source: str) -> "audit_pb2.ValidateRequest":
    return audit_pb2.ValidateRequest(yaml=text, source_name=source)


def _mapping_as_json(spec: Mapping[str, Any]) -> str:
    """`spec` as JSON text (YAML the coordinator reads as it reads a file)."""
    try:
        # Non-finite numbers as protobuf's JSON spells them ("Infinity").
        return json.dumps(spec, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError) as error:
        raise SpecError(
            f"<dict>: {error} (a spec dict holds str keys and JSON values: "
            "dicts, lists, str, int, float, bool, None)"
        ) from None


def validate_request(spec: SpecLike) -> "audit_pb2.ValidateRequest":
    """The `ValidateRequest` that carries `spec` (see the module doc). Raises
    SpecError for a file that cannot be read (NOT_FOUND when it cannot be
    opened) or a mapping that cannot be written as JSON, TypeError for
    anything that is no spec."""
    if isinstance(spec, spec_pb2.AuditSpec):
        request = audit_pb2.ValidateRequest()
        request.spec.CopyFrom(spec)
        return request
    if isinstance(spec, Mapping):
        return _yaml_request(_mapping_as_json(spec), "<dict>")
    if isinstance(spec, os.PathLike):
        path = os.fspath(spec)
        if not isinstance(path, str):
            path = os.fsdecode(path)
        return _yaml_request(_read_file(path), path)
    if isinstance(spec, bytes):
        spec = _decode(spec, "<string>")
    if isinstance(spec, str):
        if _looks_like_path(spec):
            return _yaml_request(_read_file(spec), spec)
        return _yaml_request(spec, "<string>")
    raise TypeError(
        "a spec is an AuditSpec, a dict, a path or YAML text, "
        f"not {type(spec).__name__}"
    )
