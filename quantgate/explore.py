"""`quantgate.explore`: the public name of the run explorer, defined in `quantgate.analysis._run_view`
(one case side by side in `quantgate.analysis._case_diff`; a run's figures and failures in its task
kind's terms in `quantgate.analysis._task_view`; a suite's tasks in `quantgate.suite._suite_report`)."""

from quantgate.analysis._case_diff import case_diff
from quantgate.analysis._run_view import (
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
    token_fidelity,
    variant_table,
)
from quantgate.analysis._task_view import (
    class_recall,
    label_confusion,
    task_failures,
    task_figures,
    task_kind,
)
from quantgate.suite._suite_report import is_suite_dir, open_task, suite_tasks

__all__ = [
    "RunView",
    "case_diff",
    "class_recall",
    "comparisons",
    "failing_cases",
    "field_accuracy",
    "field_deltas",
    "field_scores",
    "is_suite_dir",
    "label_confusion",
    "latencies",
    "latest_run",
    "load_run_view",
    "only_variant_fails",
    "open_task",
    "pareto_frontier",
    "slice_accuracy",
    "slice_sizes",
    "suite_tasks",
    "task_failures",
    "task_figures",
    "task_kind",
    "token_fidelity",
    "variant_table",
]
