"""The decision: gate checks, the recommendation, regression sets, rollback signals, decision.md."""

from quantgate.decide._recommendation import DecisionError, decide, load_decision
from quantgate.decide._rollback import rollback_signals

__all__ = [
    "DecisionError",
    "decide",
    "load_decision",
    "rollback_signals",
]
