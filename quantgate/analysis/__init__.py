"""Reading finished runs: the explore view, run comparison, the HTML report and its charts, tables."""

from quantgate.analysis._compare import compare_runs, render_comparison
from quantgate.analysis._report import write_report
from quantgate.analysis._run_view import RunView, latest_run, load_run_view
from quantgate.render._summary_table import render_summary

__all__ = [
    "RunView",
    "compare_runs",
    "latest_run",
    "load_run_view",
    "render_comparison",
    "render_summary",
    "write_report",
]
