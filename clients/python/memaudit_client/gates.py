"""Release-gate verdicts of a report as values (docs/gates.md).

    report = client.report(audit_id)
    for gate in gate_verdicts(report):
        print(gate.metric, gate.outcome, gate.reason)
    if any(gate.failed for gate in gate_verdicts(report)):
        raise SystemExit("a privacy gate failed")
"""

from dataclasses import dataclass
from typing import Any, List, Mapping

# GateOutcome's names in the results (memaudit.v1.GateOutcome) -> the verdict.
_OUTCOMES = {"GATE_PASS": "pass", "GATE_FAIL": "fail", "GATE_INCONCLUSIVE": "inconclusive"}


@dataclass(frozen=True)
class GateVerdict:
    """One gate's verdict: the metric, `bound` ("max" or "min") and `limit`,
    the metric's value and the interval the verdict read, the outcome
    ("pass", "fail" or "inconclusive") and why."""

    metric: str
    bound: str
    limit: float
    value: float
    low: float
    high: float
    outcome: str
    reason: str

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    @property
    def failed(self) -> bool:
        return self.outcome == "fail"

    @property
    def inconclusive(self) -> bool:
        return self.outcome == "inconclusive"


def gate_verdicts(report: Mapping[str, Any]) -> List[GateVerdict]:
    """The verdicts in a report (Client.report's dict), in the spec's order;
    empty without gates or before the results are complete."""
    return [
        GateVerdict(
            metric=str(g.get("metric", "")),
            bound=str(g.get("bound", "")),
            limit=float(g.get("limit", 0.0)),
            value=float(g.get("value", 0.0)),
            low=float(g.get("low", 0.0)),
            high=float(g.get("high", 0.0)),
            outcome=_OUTCOMES.get(str(g.get("outcome", "")), "inconclusive"),
            reason=str(g.get("reason", "")),
        )
        for g in report.get("gates", [])
    ]
