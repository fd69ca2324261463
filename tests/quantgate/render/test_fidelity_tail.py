"""Token fidelity's tail in the terminal table, decision.md and the HTML report."""

from pathlib import Path

from evaluators.fidelity import TokenFidelity, summarize_token_fidelity
from quantgate.analysis._report import write_report
from quantgate.decide._recommendation import decide
from quantgate.render._decision_markdown import render_decision
from quantgate.render._fidelity_tail import fidelity_tail
from quantgate.render._summary_table import render_summary
from quantgate.rundir._files import SUMMARY_FILE
from quantgate.rundir._store import read_decision, read_summary, write_model
from quantgate.rundir._summary import TokenFidelityEntry
from tests.quantgate.run_factory import make_run

# Δp sorted: -0.3, -0.1, 0.0, 0.1 (p1 = -0.294, largest drop -0.3); top-1 structural 2 of 3, value 1 of 1
CASE = TokenFidelity(
    kld=(0.4, 0.02, 0.03, 0.0),
    top1=(False, True, True, True),
    delta_p=(-0.3, -0.1, 0.1, 0.0),
    kinds=("structural", "structural", "structural", "value"),
    tags=("lang:en",),
)
# KLD sorted: 0, 0.02, 0.03, 0.4: mean 0.1125; p99 at rank 2.97: 0.03 + 0.97 * 0.37 = 0.3889
ENTRY = TokenFidelityEntry.of(summarize_token_fidelity(cases=[CASE]), method="test", records="fidelity.jsonl")
ROW = [
    "Q4",
    "4",
    "0.1125",
    "0.3889",
    "—",
    "0.4000",
    "-7.5",
    "-29.4",
    "-27.0",
    "-30.0",
    "75.0%",
    "66.7%",
    "100.0%",
]


def test_the_tail_row_shows_each_figure_and_missing_ones_as_missing():
    tail = fidelity_tail([("R", None), ("Q4", ENTRY)])
    assert tail is not None
    assert tail.header[3:6] == ["KLD p99", "KLD p99.9", "KLD max"]
    assert tail.rows == [ROW]  # KLD p99.9: 4 positions are too few
    assert tail.slice_rows == [
        ["Q4", "lang:en", "4", "0.1125", "0.3889", "0.4000", "-29.4", "-30.0", "66.7%", "100.0%"]
    ]
    assert fidelity_tail([("R", None)]) is None


def test_terminal_decision_and_report_show_the_tail(tmp_path: Path):
    run_dir = make_run(
        tmp_path / "run", {"R": [{"a": 1.0}] * 4, "Q4": [{"a": 1.0}] * 4}, footprints={"R": 2, "Q4": 1}
    )
    summary = read_summary(run_dir)
    summary.variants[1].token_fidelity = ENTRY
    write_model(run_dir / SUMMARY_FILE, summary)
    terminal = render_summary(read_summary(run_dir))
    assert "token fidelity:" in terminal
    assert "token fidelity per slice:" in terminal
    assert "  ".join(["-29.4", "-27.0", "-30.0"]) in terminal
    decide(run_dir)
    markdown = render_decision(read_decision(run_dir))
    assert "## Token fidelity" in markdown
    assert "| " + " | ".join(ROW) + " |" in markdown
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert '<h2 id="token-fidelity">Token fidelity</h2>' in html
    assert '<td class="num">-29.4</td><td class="num">-27.0</td><td class="num">-30.0</td>' in html
