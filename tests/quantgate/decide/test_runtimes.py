"""Runtimes compared: variants of the same model file (sha256) on different backends, judged like a
quantization (`quantgate.decide._runtimes`, the gate `max_runtime_accuracy_drop`); every figure below
is counted by hand from the constructed records."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from quantgate.backends._runtime_pairs import same_file_pairs
from quantgate.decide._recommendation import decide
from quantgate.inputs._gates import Gates
from quantgate.rundir._decision import Decision
from quantgate.rundir._files import RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE
from tests.quantgate.run_factory import make_run

GATE = "max_runtime_accuracy_drop"


def _make_runtime_run(
    directory: Path,
    scores: dict[str, list[dict[str, float]]],
    backends: dict[str, tuple[str, str | None]],
    values: dict[str, list[dict[str, Any]]] | None = None,
    *,
    reference: str = "R",
) -> Path:
    """`make_run`, then each variant's backend and sha256 in variants.json and the summary, and, with
    `values`, each case's normalized record (the records `make_run` writes have none)."""
    run = make_run(directory, scores, footprints=dict.fromkeys(scores, 400.0), reference=reference)
    variants = json.loads((run / VARIANTS_FILE).read_text())
    for entry in variants["variants"]:
        entry["backend"], entry["sha256"] = backends[entry["name"]]
    (run / VARIANTS_FILE).write_text(json.dumps(variants))
    summary = json.loads((run / SUMMARY_FILE).read_text())
    for entry in summary["variants"]:
        entry["backend"] = backends[entry["name"]][0]
    (run / SUMMARY_FILE).write_text(json.dumps(summary))
    lines = [json.loads(line) for line in (run / RECORDS_FILE).read_text().splitlines()]
    for line in lines:
        if values and line["variant"] in values:
            line["record"] = values[line["variant"]][int(line["case_id"][1:])]
    (run / RECORDS_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


RIGHT = {"a": 1.0, "b": 1.0}
# Gold of case i: a = "x", b = i. E (embedded) and S (server) serve the same file "q4".
E_SCORES = [RIGHT, RIGHT, {"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.0}]
E_RECORDS = [{"a": "x", "b": 0}, {"a": "x", "b": 1}, {"a": "x", "b": 9}, {"a": "y", "b": 9}]
S_SCORES = [RIGHT, {"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.0}]
S_RECORDS = [{"a": "x", "b": 0}, {"a": "x", "b": 5}, {"a": "x", "b": 9}, {"a": "z", "b": 7}]
BACKENDS: dict[str, tuple[str, str | None]] = {
    "R": ("llamacpp", "f16"),
    "E": ("llamacpp", "q4"),
    "S": ("openai", "q4"),
}


def test_the_server_is_compared_with_the_embedded_variant_of_its_file(tmp_path: Path) -> None:
    run = _make_runtime_run(
        tmp_path / "run",
        {"R": [RIGHT] * 4, "E": E_SCORES, "S": S_SCORES},
        BACKENDS,
        {"R": [{"a": "x", "b": i} for i in range(4)], "E": E_RECORDS, "S": S_RECORDS},
    )
    decision = decide(run, Gates(max_runtime_accuracy_drop=0.05))
    [pair] = decision.runtimes
    assert (pair.base, pair.variant, pair.base_is) == ("E", "S", "embedded")
    assert (pair.base_backend, pair.variant_backend, pair.sha256) == ("llamacpp", "openai", "q4")
    assert (pair.cases, pair.identical) == (4, 2)  # c0 and c2 are the same records
    # S against E per case: c0 1, c1 0.5 (b 5 vs 1), c2 1, c3 0 (a z vs y, b 7 vs 9): 2.5 / 4
    assert pair.agreement is not None
    assert pair.agreement.overall == pytest.approx(0.625)
    assert pair.agreement.cases == 4
    assert pair.agreement.interval is not None
    assert 0.0 <= pair.agreement.interval.low <= 0.625 <= pair.agreement.interval.high <= 1.0
    accuracy = pair.accuracy
    assert accuracy is not None
    # E's case accuracies 1, 1, .5, 0 (0.625); S's 1, .5, .5, 0 (0.5); c1 right for E only
    assert accuracy.reference == pytest.approx(0.625)
    assert accuracy.variant == pytest.approx(0.5)
    assert accuracy.delta == pytest.approx(-0.125)
    assert (accuracy.reference_only, accuracy.variant_only, accuracy.cases) == (1, 0, 4)
    assert pair.token_fidelity is None
    assert pair.token_fidelity_missing is not None
    assert pair.token_fidelity_missing.startswith("not measured: ")
    gates = {name: {g.gate: g for g in v.gates} for name, v in decision.variants.items()}
    assert gates["S"][GATE].status == "inconclusive"  # 4 paired cases, fewer than 30
    assert gates["S"][GATE].value == pytest.approx(-0.125)
    assert gates["S"][GATE].evidence.startswith("vs E (llamacpp): delta -12.5 pts")
    assert gates["E"][GATE].status == "pass"
    assert gates["E"][GATE].evidence == "the base of its runtime comparison"
    assert gates["R"][GATE].evidence == "the reference itself"
    markdown = (run / "decision.md").read_text()
    section = markdown.split("## Runtime comparison", 1)[1]
    assert "| E (llamacpp; the embedded variant) | S (openai) | 4 | 2/4 | 62.5% |" in section
    assert "| 62.5% | 50.0% | -12.5 |" in section
    assert "| inconclusive |" in section.split("\n\n")[1]


def test_the_gate_passes_fails_and_is_not_measured_by_the_paired_interval(tmp_path: Path) -> None:
    """40 cases: S1 agrees with E on all (delta 0, whose interval reaches about -10 points: within 20),
    S2 misses every field of the first 20 cases (delta -50 points, beyond 20); Q has no partner."""
    half_wrong = [{"a": 0.0, "b": 0.0}] * 20 + [RIGHT] * 20
    backends: dict[str, tuple[str, str | None]] = {
        "R": ("llamacpp", "f16"),
        "E": ("llamacpp", "q4"),
        "S1": ("openai", "q4"),
        "S2": ("ollama", "q4"),
        "Q": ("llamacpp", None),
    }
    scores = {"R": [RIGHT] * 40, "E": [RIGHT] * 40, "S1": [RIGHT] * 40, "S2": half_wrong, "Q": [RIGHT] * 40}
    run = _make_runtime_run(tmp_path / "run", scores, backends)
    decision = decide(run, Gates(max_runtime_accuracy_drop=0.2))
    status = {
        name: next(g.status for g in v.gates if g.gate == GATE) for name, v in decision.variants.items()
    }
    assert status == {"R": "pass", "E": "pass", "S1": "pass", "S2": "fail", "Q": "not_measured"}
    pairs = {c.variant: c for c in decision.runtimes}
    assert set(pairs) == {"S1", "S2"}
    assert {c.base for c in pairs.values()} == {"E"}
    assert pairs["S2"].accuracy is not None
    assert pairs["S2"].accuracy.delta == pytest.approx(-0.5)
    assert pairs["S1"].agreement is None  # make_run's records hold no normalized record to compare
    assert (pairs["S1"].identical, pairs["S2"].identical) == (0, 0)
    assert decision.variants["S2"].passes is False


def test_without_the_gate_the_comparison_is_still_shown_and_no_verdict_given(tmp_path: Path) -> None:
    run = _make_runtime_run(tmp_path / "run", {"R": [RIGHT] * 4, "E": E_SCORES, "S": S_SCORES}, BACKENDS)
    decision = decide(run)
    assert [c.variant for c in decision.runtimes] == ["S"]
    assert all(g.gate != GATE for v in decision.variants.values() for g in v.gates)
    assert "| off |" in (run / "decision.md").read_text().split("## Runtime comparison", 1)[1]


def test_when_the_reference_is_the_base_its_token_fidelity_is_the_pairs(tmp_path: Path) -> None:
    backends: dict[str, tuple[str, str | None]] = {"R": ("ollama", "h"), "S": ("openai", "h")}
    run = _make_runtime_run(tmp_path / "run", {"R": E_SCORES, "S": S_SCORES}, backends)
    summary = json.loads((run / SUMMARY_FILE).read_text())
    fidelity = {"method": "m", "records": "fidelity.jsonl", "positions": 10, "cases": 4}
    fidelity |= {"kld_mean": 0.0123, "kld_p95": None, "kld_p99": None, "kld_max": None, "top1_agreement": 0.9}
    summary["variants"][1]["token_fidelity"] = fidelity
    (run / SUMMARY_FILE).write_text(json.dumps(summary))
    [pair] = decide(run).runtimes
    assert (pair.base, pair.base_is) == ("R", "reference")
    assert pair.token_fidelity is not None
    assert pair.token_fidelity.kld_mean == 0.0123
    assert pair.token_fidelity_missing is None
    assert "KLD mean 0.0123, top-1 90.0%" in (run / "decision.md").read_text()


def test_base_is_the_embedded_variant_else_the_reference_else_the_first_listed() -> None:
    assert same_file_pairs([("A", "ollama", "h"), ("B", "openai", "h")], "A") == [("A", "B", "reference")]
    assert same_file_pairs([("A", "ollama", "h"), ("B", "openai", "h")], "Z") == [("A", "B", "listed_first")]
    listed = [("A", "openai", "h"), ("B", "llamacpp", "h"), ("C", "llamacpp", "h"), ("D", "ollama", "h")]
    assert same_file_pairs(listed, "A") == [("B", "A", "embedded"), ("B", "D", "embedded")]  # C: same backend
    assert same_file_pairs([("A", "ollama", None), ("B", "openai", None)], "A") == []  # no sha256
    assert same_file_pairs([("A", "ollama", "h"), ("B", "ollama", "h")], "A") == []  # one backend
    assert same_file_pairs([("A", "ollama", "h"), ("B", "openai", "g")], "A") == []  # two files


def test_a_decision_written_before_runtime_comparisons_is_read_with_none(tmp_path: Path) -> None:
    run = _make_runtime_run(tmp_path / "run", {"R": [RIGHT] * 4, "E": E_SCORES, "S": S_SCORES}, BACKENDS)
    data = decide(run).model_dump(mode="json")
    del data["runtimes"]
    del data["gates"][GATE]
    old = Decision.model_validate(data)
    assert old.runtimes == []
    assert old.gates.max_runtime_accuracy_drop is None


def test_the_report_shows_the_runtime_comparison(tmp_path: Path) -> None:
    from quantgate.analysis._report import write_report

    run = _make_runtime_run(
        tmp_path / "run",
        {"R": [RIGHT] * 4, "E": E_SCORES, "S": S_SCORES},
        BACKENDS,
        {"R": [{"a": "x", "b": i} for i in range(4)], "E": E_RECORDS, "S": S_RECORDS},
    )
    decide(run, Gates(max_runtime_accuracy_drop=0.05))
    page = write_report(run).read_text(encoding="utf-8")
    section = page.split('<h2 id="runtimes">Runtime comparison</h2>', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", section)
    not_measured = "not measured: token fidelity is measured against the run&#39;s reference, and E is not it"
    assert cells == [
        "E (llamacpp; the embedded variant)", "S (openai)", "4", "2/4", "62.5%", cells[5], "62.5%", "50.0%",
        "-12.5", cells[9], not_measured, "inconclusive",
    ]  # fmt: skip
    assert cells[5].startswith("[")
    assert cells[9].startswith("[")


def test_the_embedded_base_is_chosen_by_declared_capabilities_not_by_name(register_backend) -> None:
    from quantgate.backends import BackendCapabilities
    from quantgate.backends._runtime_pairs import embedded_backend

    def never_opened(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not opened")

    # a backend of its own running the file in process (llama.cpp's declaration) is embedded
    register_backend(
        "my-gguf", never_opened, capabilities=BackendCapabilities(model_file=True, memory="process")
    )
    register_backend(
        "file-server", never_opened, capabilities=BackendCapabilities(model_file=True, memory="server")
    )
    assert [embedded_backend(b) for b in ("llamacpp", "my-gguf", "file-server", "ollama", "openai")] == [
        True, True, False, False, False,
    ]  # fmt: skip
    assert embedded_backend("nowhere") is False  # unknown here: declares nothing
    listed = [("A", "ollama", "h"), ("B", "my-gguf", "h"), ("C", "file-server", "h"), ("D", "nowhere", "h")]
    assert same_file_pairs(listed, "A") == [
        ("B", "A", "embedded"),
        ("B", "C", "embedded"),
        ("B", "D", "embedded"),
    ]
    assert same_file_pairs([("A", "nowhere", "h"), ("B", "file-server", "h")], "Z") == [
        ("A", "B", "listed_first")
    ]
