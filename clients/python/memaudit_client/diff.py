"""Two audits compared metric by metric, as values (docs/gates.md,
"Comparing two audits"): what `memaudit diff` prints.

    changes = client.diff(old_audit_id, "archive/results.json")
    for change in changes:
        print(change.metric, change.old, change.new, change.difference)
    if regressions(changes):
        raise SystemExit("a privacy metric got significantly worse")
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:  # pragma: no cover
    from google.protobuf.message import Message


@dataclass(frozen=True)
class Reading:
    """A value with its 95% interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class MetricChange:
    """One metric of two audits: each side's reading (None when that audit
    does not report it), new - old with its interval (None unless both sides
    have an interval), whether the difference's interval excludes 0, and
    whether it lies above 0: worse, since every metric is one where higher
    means more leakage."""

    metric: str
    old: Optional[Reading]
    new: Optional[Reading]
    difference: Optional[Reading]
    significant: bool
    worse: bool


def _reading(change: "Message", field: str) -> Optional[Reading]:
    if not change.HasField(field):
        return None
    r = getattr(change, field)
    return Reading(value=r.value, low=r.low, high=r.high)


def changes_from_proto(response: "Message") -> List[MetricChange]:
    """The changes of a memaudit.v1.DiffResponse."""
    return [
        MetricChange(
            metric=c.metric,
            old=_reading(c, "old_reading"),
            new=_reading(c, "new_reading"),
            difference=_reading(c, "difference"),
            significant=c.significant,
            worse=c.worse,
        )
        for c in response.changes
    ]


def regressions(changes: List[MetricChange]) -> List[MetricChange]:
    """The changes that are significantly worse: what makes
    `memaudit diff --fail-on-regression` exit 4."""
    return [c for c in changes if c.worse]
