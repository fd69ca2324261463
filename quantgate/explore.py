"""`quantgate.explore`: the public name of the run explorer, defined in `quantgate.analysis.run_view`
(one case side by side in `quantgate.analysis.case_diff`)."""

from quantgate.analysis.case_diff import case_diff
from quantgate.analysis.run_view import (
    RunView,
    comparisons,
    failing_cases,
    field_accuracy,
    field_deltas,
    field_scores,
    latencies,
    latest_run,
    load_run_view,
    only_variant_fails,
    pareto_frontier,
    slice_accuracy,
    slice_sizes,
    variant_table,
)

__all__ = [
    "RunView",
    "case_diff",
    "comparisons",
    "failing_cases",
    "field_accuracy",
    "field_deltas",
    "field_scores",
    "latencies",
    "latest_run",
    "load_run_view",
    "only_variant_fails",
    "pareto_frontier",
    "slice_accuracy",
    "slice_sizes",
    "variant_table",
]
