"""Reading finished runs: the explore view, run comparison, the HTML report and its charts, tables."""

from quantgate.analysis.compare import compare_runs, render_comparison
from quantgate.analysis.report import write_report
from quantgate.analysis.run_view import RunView, latest_run, load_run_view
from quantgate.render.summary_table import render_summary

__all__ = [
    "RunView",
    "compare_runs",
    "latest_run",
    "load_run_view",
    "render_comparison",
    "render_summary",
    "write_report",
]
