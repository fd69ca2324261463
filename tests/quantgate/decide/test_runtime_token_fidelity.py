"""A runtime pair's own token fidelity (summary.json's `runtime_token_fidelity`, measured against an
embedded base) in decision.json, decision.md and the report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from quantgate.decide._recommendation import decide
from quantgate.rundir._files import SUMMARY_FILE
from tests.quantgate.decide.test_runtimes import BACKENDS, E_SCORES, RIGHT, S_SCORES, _make_runtime_run

FIDELITY = {"method": "top-20 lower bound", "records": "fidelity.jsonl", "positions": 120, "cases": 2,
            "kld_mean": 0.0003, "kld_p95": None, "kld_p99": None, "kld_max": 0.0037,
            "top1_agreement": 1.0}  # fmt: skip


def _run(tmp_path: Path, **server: Any) -> Path:
    run = _make_runtime_run(tmp_path / "run", {"R": [RIGHT] * 4, "E": E_SCORES, "S": S_SCORES}, BACKENDS)
    summary = json.loads((run / SUMMARY_FILE).read_text())
    entry = next(e for e in summary["variants"] if e["name"] == "S")
    entry |= server
    (run / SUMMARY_FILE).write_text(json.dumps(summary))
    return run


def test_the_pairs_own_token_fidelity_is_shown_against_an_embedded_base(tmp_path: Path) -> None:
    run = _run(tmp_path, runtime_token_fidelity=FIDELITY, runtime_token_fidelity_base="E")
    [pair] = decide(run).runtimes
    assert (pair.base, pair.variant) == ("E", "S")
    assert pair.token_fidelity is not None
    assert (pair.token_fidelity.kld_mean, pair.token_fidelity.top1_agreement) == (0.0003, 1.0)
    assert pair.token_fidelity.method == "top-20 lower bound"
    assert pair.token_fidelity_missing is None
    section = (run / "decision.md").read_text().split("## Runtime comparison", 1)[1]
    assert "| KLD mean 0.0003, top-1 100.0% |" in section
    assert "top-k lower bound of the KLD" in section

    from quantgate.analysis._report import write_report

    page = write_report(run).read_text(encoding="utf-8")
    table = page.split('<h2 id="runtimes">Runtime comparison</h2>', 1)[1].split("</table>", 1)[0]
    assert "KLD mean 0.0003, top-1 100.0%" in re.findall(r"<td[^>]*>(.*?)</td>", table)


def test_a_figure_against_another_base_is_not_taken_and_a_reason_is_shown(tmp_path: Path) -> None:
    other = _run(tmp_path / "other", runtime_token_fidelity=FIDELITY, runtime_token_fidelity_base="R")
    [pair] = decide(other).runtimes
    assert pair.token_fidelity is None
    assert pair.token_fidelity_missing == (
        "not measured: token fidelity is measured against the run's reference, and E is not it"
    )
    why = 'not measured: the variant uses the chat API; set its option api = "completions"'
    chat = _run(tmp_path / "chat", runtime_token_fidelity_base="E", runtime_token_fidelity_missing=why)
    [pair] = decide(chat).runtimes
    assert (pair.token_fidelity, pair.token_fidelity_missing) == (None, why)
    assert why in (chat / "decision.md").read_text()
