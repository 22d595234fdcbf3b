"""Protobuf messages as plain Python values.

`to_dict` is `google.protobuf.json_format.MessageToDict` with the proto field
names and every primitive field present (the layout of `memaudit report
--json`, docs/results.md), with two changes that make the dict easier to use
from Python: 64-bit integers are `int` (protobuf's JSON writes them as
strings) and non-finite doubles are `float` (`inf`, `nan`; JSON writes
"Infinity", "NaN"). Enums are their names ("SUCCEEDED"). Nothing here names a
field: the conversion follows the message descriptors, so it keeps working
when the protos change.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

_INT64_TYPES = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}
_FLOAT_TYPES = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT}

# protobuf renamed the option in 5.26; Debian 12 ships 4.21.
_PRINT_DEFAULTS = (
    "always_print_fields_with_no_presence"
    if "always_print_fields_with_no_presence"
    in inspect.signature(json_format.MessageToDict).parameters
    else "including_default_value_fields"
)


def _json_options(defaults: bool) -> Dict[str, bool]:
    return {"preserving_proto_field_name": True, _PRINT_DEFAULTS: defaults}


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.type in _INT64_TYPES and isinstance(value, str):
        return int(value)
    if field.type in _FLOAT_TYPES and isinstance(value, str):
        return float(value)  # "NaN", "Infinity", "-Infinity"
    return value


def _value(field: FieldDescriptor, value: Any) -> Any:
    if field.type != FieldDescriptor.TYPE_MESSAGE:
        return _scalar(field, value)
    message_type = field.message_type
    if message_type.full_name.startswith("google.protobuf."):
        return value  # well-known types have their own JSON forms
    return _fix(message_type, value)


def _fix(descriptor: Descriptor, data: Dict[str, Any]) -> Dict[str, Any]:
    """Converts `data` (MessageToDict's output for `descriptor`) in place."""
    for key, value in data.items():
        field = descriptor.fields_by_name.get(key)
        if field is None:
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            for k in value:
                value[k] = _value(value_field, value[k])
        elif field.label == FieldDescriptor.LABEL_REPEATED:
            data[key] = [_value(field, v) for v in value]
        else:
            data[key] = _value(field, value)
    return data


def to_dict(message: Message, defaults: bool = True) -> Dict[str, Any]:
    """`message` as a dict keyed by proto field names (see the module doc).

    defaults: include primitive fields that hold their zero value, as
    `memaudit report --json` does; unset sub-messages and oneof members are
    left out either way.
    """
    data: Dict[str, Any] = json_format.MessageToDict(message, **_json_options(defaults))
    return _fix(message.DESCRIPTOR, data)


def to_json(message: Message) -> str:
    """`message` in protobuf's canonical JSON mapping, as `memaudit report --json`
    writes it: proto field names, every primitive field, 64-bit integers as
    strings."""
    text: str = json_format.MessageToJson(message, indent=1, **_json_options(True))
    return text + "\n"
