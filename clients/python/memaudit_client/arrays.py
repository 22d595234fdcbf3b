"""Results as NumPy arrays and pandas DataFrames.

An export (docs/export.md) arrives as `memaudit.v1.ExportArray` pieces:
`assemble` joins them into arrays of the stated shape and dtype, with the
dtypes read from the generated `ExportDtype` enum (FLOAT64 is numpy's
float64, ...): a dtype this client does not know is an error, never read as
another. `frame` lays the arrays that share a set of axes out as one
DataFrame, one row per element; `roc_arrays` gives a report's ROC curves
and operating points as arrays.

NumPy (Debian: python3-numpy) and pandas (python3-pandas) are imported when
first needed: the rest of the client works without them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import grpc

from ._proto import export_pb2
from .convert import to_dict
from .errors import MemauditError

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import NDArray
    import pandas
    from google.protobuf.message import Message

# ExportDtype value -> numpy's name of the type ("float64", "uint8",
# "int64"), from the enum's value names.
EXPORT_DTYPES: Dict[int, str] = {
    value: name.lower()
    for name, value in export_pb2.ExportDtype.items()
    if value != export_pb2.EXPORT_DTYPE_UNSPECIFIED
}


def require_numpy() -> Any:
    """The numpy module; ImportError saying how to install it."""
    try:
        import numpy
    except ImportError as error:
        raise ImportError(
            "memaudit_client's arrays need NumPy: install it (Debian: python3-numpy; "
            "pip: memaudit-client[numpy])"
        ) from error
    return numpy


def require_pandas() -> Any:
    """The pandas module; ImportError saying how to install it."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError(
            "memaudit_client's DataFrames need pandas: install it (Debian: python3-pandas; "
            "pip: memaudit-client[pandas]), or use the arrays (Client.export)"
        ) from error
    return pandas


def export_dtype(value: int, name: str = "") -> str:
    """numpy's name of the type of ExportDtype `value`. MemauditError
    UNIMPLEMENTED for a value this client does not know (a newer server's):
    reading it as another type would give wrong numbers."""
    try:
        return EXPORT_DTYPES[value]
    except KeyError:
        known = ", ".join(f"{v} ({n})" for v, n in sorted(EXPORT_DTYPES.items()))
        raise MemauditError(
            grpc.StatusCode.UNIMPLEMENTED,
            f"export: array {name or '?'} has dtype {value}, which this client does not know "
            f"(it knows {known}); update memaudit-client",
        ) from None


@dataclasses.dataclass
class ExportedArray:
    """One per-example array of an export: its name, axes (outermost first),
    shape, dtype (numpy's name), description and the array itself."""

    name: str
    axes: List[str]
    shape: Tuple[int, ...]
    dtype: str
    description: str
    array: "NDArray[Any]"

    def as_dict(self) -> Dict[str, Any]:
        """As a dict with the same keys (the array not copied)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def assemble(pieces: Iterable["Message"]) -> List[ExportedArray]:
    """Arrays from ExportArray pieces in the order they arrive: a piece with
    offset 0 starts an array, each further piece continues it where the
    last one ended. MemauditError DATA_LOSS for pieces out of order or an
    array whose values do not fill its shape; UNIMPLEMENTED for an unknown
    dtype."""
    np = require_numpy()
    headers: List[Dict[str, Any]] = []
    parts: List[List[Any]] = []
    filled: List[int] = []
    for piece in pieces:
        if piece.offset == 0:
            headers.append(
                {
                    "name": piece.name,
                    "axes": list(piece.axes),
                    "shape": tuple(int(n) for n in piece.shape),
                    "dtype": export_dtype(piece.dtype, piece.name),
                    "description": piece.description,
                }
            )
            parts.append([])
            filled.append(0)
        elif not headers or headers[-1]["name"] != piece.name or filled[-1] != piece.offset:
            raise MemauditError(
                grpc.StatusCode.DATA_LOSS,
                f"export: a piece of {piece.name} out of order (offset {piece.offset})",
            )
        parts[-1].append(np.asarray(piece.values, dtype=np.float64))
        filled[-1] += len(piece.values)
    out = []
    for header, values, count in zip(headers, parts, filled):
        size = 1
        for n in header["shape"]:
            size *= n
        if count != size:
            raise MemauditError(
                grpc.StatusCode.DATA_LOSS,
                f"export: {header['name']} has {count} values for shape {header['shape']}",
            )
        flat = np.concatenate(values) if values else np.zeros(0)
        array = flat.astype(header["dtype"]).reshape(header["shape"])
        out.append(ExportedArray(array=array, **header))
    return out


def frame(arrays: Sequence[ExportedArray], axes: Optional[Sequence[str]] = None) -> "pandas.DataFrame":
    """The arrays over exactly `axes` as one DataFrame: one row per element,
    indexed by its position on each axis (a MultiIndex named after the axes,
    outermost first, as the export's CSV files), one column per array, in
    export order. E.g. a membership audit's ("target", "example") gives the
    columns score_lira_online, score_rmia, ...; ("model", "example") keep,
    phi, loss.

    axes: None for the axes most arrays share (the first such in export
    order). ValueError when no array has these axes, or arrays over them
    differ in shape."""
    pd = require_pandas()
    if axes is None:
        counts: Dict[Tuple[str, ...], int] = {}
        for a in arrays:
            counts[tuple(a.axes)] = counts.get(tuple(a.axes), 0) + 1
        if not counts:
            raise ValueError("export: no arrays")
        axes = max(counts, key=lambda k: counts[k])  # the first of the most
    wanted = list(axes)
    chosen = [a for a in arrays if a.axes == wanted]
    if not chosen:
        seen = sorted({tuple(a.axes) for a in arrays})
        raise ValueError(f"export: no array has axes {tuple(wanted)} (they have {seen})")
    shape = chosen[0].shape
    differ = [a.name for a in chosen if a.shape != shape]
    if differ:
        raise ValueError(f"export: arrays over {tuple(wanted)} differ in shape: {differ}")
    if wanted:
        index = pd.MultiIndex.from_product([range(n) for n in shape], names=wanted)
    else:
        index = pd.RangeIndex(1)
    return pd.DataFrame({a.name: a.array.reshape(-1) for a in chosen}, index=index)


@dataclasses.dataclass
class RocArrays:
    """One membership attack's curve and operating points as arrays.

    fpr, tpr: the ROC curve's points (results.proto RocPoint), in order.
    operating_points: each OperatingPoint field (fpr_target, tpr, fpr,
    threshold, tpr_low, ...) as an array, one element per point.
    """

    attack: str
    fpr: "NDArray[Any]"
    tpr: "NDArray[Any]"
    operating_points: Dict[str, "NDArray[Any]"]


def roc_arrays(report: "Mapping[str, Any] | Message") -> Dict[str, RocArrays]:
    """Each membership attack of `report` (Client.report's dict, or the
    AuditResults message) by its name ("LIRA_ONLINE", ...): its ROC curve
    and operating points as NumPy arrays. Empty for an audit without
    membership attacks."""
    np = require_numpy()
    data: Mapping[str, Any] = report if isinstance(report, Mapping) else to_dict(report)
    out: Dict[str, RocArrays] = {}
    for attack in data.get("attacks", []):
        roc = attack.get("roc", [])
        points = attack.get("operating_points", [])
        keys = list(points[0]) if points else []
        out[str(attack["attack"])] = RocArrays(
            attack=str(attack["attack"]),
            fpr=np.array([p.get("fpr", 0.0) for p in roc], dtype=np.float64),
            tpr=np.array([p.get("tpr", 0.0) for p in roc], dtype=np.float64),
            operating_points={
                k: np.array([p.get(k, 0.0) for p in points], dtype=np.float64) for k in keys
            },
        )
    return out
