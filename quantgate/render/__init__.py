"""Renderers: the run's figures shown to people, as terminal tables and decision.md.

`_summary_table.py` (the table `quantgate run` prints), `_load_table.py` (the load figures),
`_embedding_table.py` (the embedding figures), `_cost_rows.py` (the decision's cost table),
`_task_figures.py` (a run's task-kind figures: classification, generation, tool calling; which,
with titles and formats, its kind object says, `evaluators.kinds`; the HTML report reads it too),
`_decision_markdown.py` (decision.md) and `_suite_grid.py` (a suite's grid, suite_decision.md).
Each reads the run files' models (`quantgate.rundir`) and shows numbers with `quantgate._formatting`.
The HTML report and run comparison read runs through the analysis view, so they stay in
`quantgate.analysis`.
"""

from quantgate.render._cost_rows import cost_rows
from quantgate.render._decision_markdown import render_decision
from quantgate.render._embedding_table import embeddings_table
from quantgate.render._load_table import render_load
from quantgate.render._markdown import escape_markdown
from quantgate.render._summary_table import render_summary

__all__ = [
    "cost_rows",
    "embeddings_table",
    "escape_markdown",
    "render_decision",
    "render_load",
    "render_summary",
]
