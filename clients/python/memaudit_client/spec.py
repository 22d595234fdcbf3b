"""Audit specs: YAML text, YAML files and dicts to `memaudit.v1.AuditSpec`.

This follows the memaudit CLI's reader (common/spec_yaml.cc) so that a spec
file means the same here as to `memaudit submit`:

* YAML maps onto AuditSpec through protobuf's JSON mapping
  (`json_format.ParseDict`): every field by its proto name. Keys that name no
  field are refused all at once, each with its path and the nearest field
  ("membership.model.hiden: unknown field; did you mean "hidden"?").
* Plain scalars are read by YAML 1.2's rules, not PyYAML's YAML 1.1 ones:
  `true`/`True`/`false`/`False` are booleans, `null`, `~` and nothing are
  null, numbers are numbers, and everything else (`yes`, `on`, `2024-01-01`,
  `1_000`) is text. A quoted scalar is always text.
* Duplicate keys are refused; nesting (64 levels), nodes (100,000, aliases
  counting their whole expansion) and bytes (1 MiB of document, 4 MiB of
  expanded keys and values) are bounded as in the CLI.
* `resources.models_per_task: auto` leaves the field unset (the coordinator
  picks); an explicit 0 there, or for `exposure.canary.digits` and
  `forgetting.canaries.canary.digits`, is refused, since 0 would silently
  mean the default.
* A spec without `name` is named after its file (`quickstart` for
  quickstart.yaml), or `audit` for text and dicts; an empty name is refused.

Errors are `SpecError` (INVALID_ARGUMENT) naming the source, the line and
column where YAML knows them, and the key path. The wording of protobuf's
own parse errors (a value of the wrong type) is Python protobuf's, not the
CLI's; both name the field.
"""

import copy
import math
import os
import pathlib
import re
import sys

import grpc
import yaml
from google.protobuf import json_format

from ._proto import spec_pb2
from .errors import SpecError

MAX_SPEC_BYTES = 1 << 20
MAX_SPEC_DEPTH = 64
MAX_SPEC_NODES = 100_000
MAX_SPEC_EXPANDED_BYTES = 4 << 20

# Fields whose proto3 zero means "use the default": an explicit 0 is refused.
_EXPLICIT_ZERO_REFUSED = [
    (("exposure", "canary", "digits"), "must be in [1, 18] (got 0); leave it out for the default"),
    (
        ("forgetting", "canaries", "canary", "digits"),
        "must be in [1, 18] (got 0); leave it out for the default",
    ),
    (("resources", "models_per_task"), "must be in [1, 64] or auto (got 0)"),
]
# Fields whose proto3 zero means "memaudit decides", spelled as a word.
_ZERO_KEYWORDS = [(("resources", "models_per_task"), "auto")]

_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


class _ReadError(Exception):
    def __init__(self, node, path, message):
        super().__init__(message)
        self.node, self.path, self.message = node, path, message


def _quote(value, limit=64):
    """`value` quoted for a message, cut after `limit` characters."""
    text = value[:limit].encode("unicode_escape").decode("ascii").replace('"', '\\"')
    return f'"{text}"' + (f"\u2026 ({len(value.encode())} bytes)" if len(value) > limit else "")


def _strtod(text):
    """What C's strtod makes of the whole of `text`: (value, out_of_range), or
    None when it is not a number."""
    if not text or not text.isascii() or "_" in text or text != text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            value = float.fromhex(text)  # strtod reads hexadecimal floats too
        except (ValueError, OverflowError):
            return None
    if math.isnan(value) or (math.isinf(value) and re.search(r"[iI][nN][fF]", text)):
        return value, False
    mantissa = re.split(r"[ep]", text.lower().replace("0x", ""))[0]
    mantissa_nonzero = bool(re.search(r"[1-9a-f]", mantissa))
    underflow = value == 0.0 and mantissa_nonzero
    subnormal = value != 0.0 and abs(value) < sys.float_info.min
    return value, math.isinf(value) or underflow or subnormal


def _plain_scalar(node, path):
    """A plain (unquoted) scalar as the CLI's reader types it."""
    text = node.value
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    if text in ("null", "~", ""):
        return None
    if _JSON_NUMBER.fullmatch(text):
        integral = "." not in text and "e" not in text.lower()
        if integral:
            value = int(text)
            if _INT64_MIN <= value <= _UINT64_MAX:
                return value
        else:
            parsed = _strtod(text)
            if parsed is not None and not parsed[1] and math.isfinite(parsed[0]):
                return parsed[0]
        raise _ReadError(node, path, f"number out of range (got {_quote(text)})")
    parsed = _strtod(text)
    if parsed is not None:
        value, out_of_range = parsed
        if out_of_range:
            raise _ReadError(node, path, f"number out of range (got {_quote(text)})")
        # inf and nan stay text: protobuf's JSON reads "Infinity" and "NaN" only.
        if math.isfinite(value):
            return value
    return text


class _Reader:
    """Composed YAML nodes to JSON-like values, under the CLI's limits."""

    def __init__(self):
        self.nodes = 0
        self.bytes = 0
        self.open = []  # collections being read, to refuse an alias to one of them

    def count(self, node, path, nodes, size):
        self.nodes += nodes
        self.bytes += size
        if self.nodes > MAX_SPEC_NODES:
            raise _ReadError(
                node,
                path,
                f"the spec expands to more than {MAX_SPEC_NODES} nodes "
                "(aliases count their whole expansion)",
            )
        if self.bytes > MAX_SPEC_EXPANDED_BYTES:
            raise _ReadError(
                node,
                path,
                f"the spec expands to more than {MAX_SPEC_EXPANDED_BYTES} bytes of keys and "
                "values (aliases count their whole expansion)",
            )

    def read(self, node, path=""):
        if isinstance(node, yaml.ScalarNode):
            self.count(node, path, 1, len(node.value.encode()))
            return _plain_scalar(node, path) if node.style is None else node.value
        if any(node is n for n in self.open):
            raise _ReadError(node, path, "an alias must follow its complete anchored node")
        if len(self.open) >= MAX_SPEC_DEPTH:
            raise _ReadError(node, path, f"nested deeper than {MAX_SPEC_DEPTH} levels")
        self.count(node, path, 1, 0)
        self.open.append(node)
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.read(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
            out = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise _ReadError(
                        key_node, path, "a key must be a plain scalar, not a map or a list"
                    )
                key = key_node.value
                if key == "" and key_node.style is None:
                    raise _ReadError(key_node, path, "a key must not be empty")
                self.count(key_node, path, 1, len(key.encode()))
                shown = key if len(key) <= 64 else _quote(key)
                key_path = f"{path}.{shown}" if path else shown
                if key in out:
                    raise _ReadError(key_node, key_path, "duplicate key")
                out[key] = self.read(value_node, key_path)
            return out
        finally:
            self.open.pop()


def _yaml_to_tree(text, source):
    size = len(text.encode()) if isinstance(text, str) else len(text)
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"{source}: the spec is {size} bytes; at most {MAX_SPEC_BYTES} are read "
            "(put large text in a file: corpus.path)"
        )
    try:
        documents = yaml.compose_all(text, Loader=yaml.SafeLoader)
        root = next(documents, None)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SpecError(f"{source}: not valid YAML: {where}{error.problem or error}") from None
    except yaml.YAMLError as error:
        raise SpecError(f"{source}: not valid YAML: {error}") from None
    if root is None:
        return None
    try:
        return _Reader().read(root)
    except _ReadError as error:
        mark = error.node.start_mark
        path = f"{error.path}: " if error.path else ""
        raise SpecError(
            f"{source}: line {mark.line + 1}, column {mark.column + 1}: {path}{error.message}"
        ) from None


def _find(tree, path):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _name_from_source(source):
    stem = pathlib.PurePath(source).stem if source else ""
    printable = all(0x20 <= ord(c) != 0x7F for c in stem)
    if not stem or len(stem) > 128 or not printable or stem.startswith("<"):
        return "audit"
    return stem


def _edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        diagonal, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            above = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1]))
            diagonal = above
    return row[len(b)]


def _nearest_name(typed, known):
    """The entry of `known` within 2 edits of `typed` (or that `typed` starts), if any."""
    if len(typed) > 256:
        return None
    best, best_distance = None, 3
    for name in known:
        d = 1 if typed and name.startswith(typed) else _edit_distance(typed, name)
        if d < best_distance:
            best, best_distance = name, d
    return best


def _unknown_fields(node, descriptor, path, out):
    """Appends (path, rule) for every key of `node` at any depth that names no
    field of `descriptor`, with the nearest field suggested."""
    if not isinstance(node, dict):
        return  # ParseDict names a wrong shape itself
    names = [f.name for f in descriptor.fields]
    json_names = {f.json_name: f for f in descriptor.fields}
    for key, value in node.items():
        field = descriptor.fields_by_name.get(key) or json_names.get(key)
        key_path = f"{path}.{key}" if path else str(key)
        if field is None:
            near = _nearest_name(str(key), names)
            rule = (
                f'unknown field; did you mean "{near}"?'
                if near
                else f"unknown field of {descriptor.name}"
            )
            out.append((key_path, rule))
            continue
        if (
            field.type != field.TYPE_MESSAGE
            or field.message_type.GetOptions().map_entry
            or field.message_type.full_name.startswith("google.protobuf.")
        ):
            continue
        if field.label == field.LABEL_REPEATED and isinstance(value, list):
            for i, item in enumerate(value):
                _unknown_fields(item, field.message_type, f"{key_path}[{i}]", out)
        else:
            _unknown_fields(value, field.message_type, key_path, out)


def spec_from_dict(tree, source="<dict>"):
    """The AuditSpec a dict (the spec's YAML as Python values) describes.

    The dict is not changed. Raises SpecError naming `source` and the field.
    """
    if not isinstance(tree, dict):
        raise SpecError(f"{source}: a spec is a map of fields (name, seed, one audit kind, ...)")
    if "name" in tree and tree["name"] in (None, ""):
        raise SpecError(
            f"{source}: name: must not be empty (leave it out to name the audit after its file)"
        )
    for path, rule in _EXPLICIT_ZERO_REFUSED:
        value = _find(tree, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
            raise SpecError(f"{source}: {'.'.join(path)}: {rule}")
    tree = copy.deepcopy(tree)
    for path, word in _ZERO_KEYWORDS:
        parent = _find(tree, path[:-1])
        if isinstance(parent, dict) and parent.get(path[-1]) == word:
            del parent[path[-1]]
    unknown = []
    _unknown_fields(tree, spec_pb2.AuditSpec.DESCRIPTOR, "", unknown)
    if unknown:
        lines = "".join(f"\n  {path}: {rule}" for path, rule in unknown)
        raise SpecError(f"{source}: {len(unknown)} unknown field(s):{lines}")
    spec = spec_pb2.AuditSpec()
    try:
        json_format.ParseDict(tree, spec, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        message = str(error)
        if len(message) > 512:
            message = _quote(message, 512) + " (cut)"
        raise SpecError(
            f"{source}: {message} (field names are those of memaudit.v1.AuditSpec; "
            "see docs/spec.md)"
        ) from None
    if not spec.name:
        spec.name = _name_from_source(source)
    return spec


def parse_spec(text, source="<string>"):
    """The AuditSpec of YAML `text` (str or bytes). `source` names it in errors
    and, for a spec without `name`, names the audit after its stem."""
    return spec_from_dict(_yaml_to_tree(text, source), source)


def load_spec(path):
    """The AuditSpec of the YAML file at `path`."""
    path = os.fspath(path)
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
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(f"{path}: not valid UTF-8 at byte {error.start}") from None
    return parse_spec(text, path)


def _looks_like_path(text):
    if "\n" in text or len(text) > 4096:
        return False
    return text.endswith((".yaml", ".yml", ".json")) or os.path.isfile(text)


def to_spec(spec):
    """An AuditSpec from what `Client.submit` accepts: an AuditSpec message, a
    dict, a path (`pathlib.Path`, or a one-line str naming a file or ending in
    .yaml/.yml/.json), or YAML text."""
    if isinstance(spec, spec_pb2.AuditSpec):
        return spec
    if isinstance(spec, dict):
        return spec_from_dict(spec)
    if isinstance(spec, os.PathLike):
        return load_spec(spec)
    if isinstance(spec, bytes):
        spec = spec.decode("utf-8")
    if isinstance(spec, str):
        return load_spec(spec) if _looks_like_path(spec) else parse_spec(spec)
    raise TypeError(
        f"a spec is an AuditSpec, a dict, a path or YAML text, not {type(spec).__name__}"
    )
