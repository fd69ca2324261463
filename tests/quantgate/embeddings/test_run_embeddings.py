"""`run --embeddings`: figures into the run's summary, judged by the embedding gates, shown in decision.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from evaluators.statistics import Interval
from quantgate.decide._checks import GateEvidence, Measured, judge_variant
from quantgate.decide._recommendation import decide
from quantgate.embeddings import EmbeddingOptions, add_embeddings
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant
from quantgate.rundir._embedding_files import EmbeddingEntry
from quantgate.rundir._files import DECISION_MD
from quantgate.rundir._store import read_summary
from tests.quantgate.run_factory import make_run


def _paired_vectors(cases: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """CLOSE and FAR for "case 0" .. "case {cases - 1}" (an even number), in cases / 2 dimensions.

    In the first, case 2j is the unit vector e_j and case 2j+1 is 0.9 e_j + 0.1 e_{j+1}: each is
    the other's nearest neighbour. In the second, case 2j+1 is 0.9 e_{j+1} + 0.1 e_j: the nearest
    neighbour of case 2j is case 2j-1, and of case 2j+1 case 2j+2, so every one changed.
    """
    pairs = cases // 2

    def vector(weights: dict[int, float]) -> list[float]:
        return [weights.get(d, 0.0) for d in range(pairs)]

    close, far = {}, {}
    for j in range(pairs):
        after = (j + 1) % pairs
        close[f"case {2 * j}"] = far[f"case {2 * j}"] = vector({j: 1.0})
        close[f"case {2 * j + 1}"] = vector({j: 0.9, after: 0.1})
        far[f"case {2 * j + 1}"] = vector({after: 0.9, j: 0.1})
    return close, far


# the run factory's case texts are "case 0" .. "case 3"
CLOSE, FAR = _paired_vectors(4)


class Table(Embeddings):
    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def _run(tmp_path: Path, *, cases: int = 4) -> Path:
    fields = [{"a": 1.0, "b": 1.0}] * cases
    return make_run(
        tmp_path / "run", {"R": fields, "Q": fields, "P": fields}, footprints={"R": 500, "Q": 250, "P": 200}
    )


def test_the_summary_gets_each_variants_figures_and_decide_gates_them(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    variants = [
        Variant.from_embeddings(name, Table(v)) for name, v in (("R", CLOSE), ("Q", CLOSE), ("P", FAR))
    ]
    add_embeddings(run_dir, variants, options=EmbeddingOptions(k=1, progress=False))
    summary = read_summary(run_dir)
    figures = {v.name: v.embeddings for v in summary.variants}
    assert figures["Q"] is not None
    assert figures["P"] is not None
    assert figures["Q"].neighbour_recall_at_k == 1.0
    assert figures["P"].neighbour_recall_at_k == 0.0  # every nearest neighbour changed
    assert (run_dir / "qdrant").is_dir()
    decision = decide(run_dir, Gates(min_neighbour_recall=0.8, min_cases=1, min_slice_cases=1))
    gate = {
        name: {g.gate: g for g in v.gates}["min_neighbour_recall"] for name, v in decision.variants.items()
    }
    assert (gate["R"].status, gate["Q"].status, gate["P"].status) == ("pass", "pass", "fail")
    assert decision.variants["P"].embeddings == figures["P"]
    markdown = (run_dir / DECISION_MD).read_text()
    assert "## Embeddings" in markdown
    assert "nbr recall@k" in markdown


def _entry(**figures: object) -> EmbeddingEntry:
    return EmbeddingEntry.model_validate(
        {"k": 10, "collection": "c", "documents": 40, "queries": 30, "dimensions": 640, **figures}
    )


MEASURED = Measured(
    cases=40,
    format_valid=40,
    errors=0,
    latency_s_p95=None,
    memory_mb=None,
    memory_source="",
    footprint_mb=None,
    footprint_source="",
)


@pytest.mark.parametrize(
    ("interval", "status"),
    [((-0.02, 0.01), "pass"), ((-0.09, -0.06), "fail"), ((-0.08, 0.0), "inconclusive")],
)
def test_the_recall_drop_gate_judges_the_paired_interval(interval: tuple[float, float], status: str) -> None:
    entry = _entry(
        recall_delta=sum(interval) / 2,
        recall_delta_interval=Interval(low=interval[0], high=interval[1], confidence=0.95, method="m"),
    )
    results = judge_variant(
        GateEvidence(
            measured=MEASURED,
            comparison=None,
            gates=Gates(max_accuracy_drop=None, max_recall_drop=0.05),
            is_reference=False,
            embeddings=entry,
        )
    )
    (result,) = [r for r in results if r.gate == "max_recall_drop"]
    assert result.status == status
    assert result.threshold == -0.05


def test_embedding_gates_without_figures_are_not_passed() -> None:
    gates = Gates(max_accuracy_drop=None, min_neighbour_recall=0.8, min_cosine_p5=0.95, max_recall_drop=0.05)
    results = {
        r.gate: r
        for r in judge_variant(
            GateEvidence(measured=MEASURED, comparison=None, gates=gates, is_reference=False, embeddings=None)
        )
    }
    assert [results[g].status for g in ("min_neighbour_recall", "min_cosine_p5", "max_recall_drop")] == [
        "not_measured"
    ] * 3
    unlabeled = {
        r.gate: r
        for r in judge_variant(
            GateEvidence(
                measured=MEASURED,
                comparison=None,
                gates=gates,
                is_reference=False,
                embeddings=_entry(neighbour_recall_at_k=0.9, cosine_p5=0.94),
            )
        )
    }
    assert (unlabeled["min_neighbour_recall"].status, unlabeled["min_cosine_p5"].status) == ("pass", "fail")
    assert "no relevance labels" in unlabeled["max_recall_drop"].evidence
    reference = {
        r.gate: r.status
        for r in judge_variant(
            GateEvidence(measured=MEASURED, comparison=None, gates=gates, is_reference=True, embeddings=None)
        )
    }
    assert [reference[g] for g in ("min_neighbour_recall", "min_cosine_p5", "max_recall_drop")] == [
        "pass"
    ] * 3


def test_the_embedding_gates_are_off_by_default() -> None:
    results = judge_variant(
        GateEvidence(
            measured=MEASURED,
            comparison=None,
            gates=Gates(),
            is_reference=False,
            embeddings=_entry(neighbour_recall_at_k=0.1),
        )
    )
    assert not [r for r in results if r.gate in ("min_neighbour_recall", "min_cosine_p5", "max_recall_drop")]


def test_the_report_shows_the_embedding_table_and_chart(tmp_path: Path) -> None:
    from quantgate.analysis._report import write_report

    run_dir = _run(tmp_path)
    variants = [
        Variant.from_embeddings(name, Table(v)) for name, v in (("R", CLOSE), ("Q", CLOSE), ("P", FAR))
    ]
    add_embeddings(run_dir, variants, options=EmbeddingOptions(k=1, progress=False))
    page = write_report(run_dir).read_text()
    assert '<h2 id="embeddings">Embeddings</h2>' in page
    assert page.index("<td>P</td>") < page.index('<td class="num">0.000</td>', page.index("<td>P</td>"))
    assert (run_dir / "report" / "embeddings.png").stat().st_size > 0


def test_run_embeddings_flag_measures_before_deciding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import quantgate.cli._run
    import quantgate.evaluate._evaluation_run
    from quantgate.cli._main import main
    from quantgate.inputs._variants import VariantSet

    cases = 100  # identical answers: enough for Q to pass the accuracy gate, so the decision is Q's
    run_dir = _run(tmp_path, cases=cases)
    close, far = _paired_vectors(cases)
    variants = [
        Variant.from_embeddings(name, Table(v)) for name, v in (("R", close), ("Q", close), ("P", far))
    ]
    monkeypatch.setattr(
        quantgate.cli._run, "cli_variants", lambda specs: VariantSet(reference="R", variants=variants)
    )
    monkeypatch.setattr(quantgate.evaluate._evaluation_run, "run_evaluation", lambda *a, **k: run_dir)
    argv = [
        "run",
        "--dataset",
        "contacts-events",
        "--limit",
        "4",
        "--embeddings",
        "--k",
        "1",
        "--min-neighbour-recall",
        "0.5",
    ]
    assert main([*argv, "--no-report", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "nbr recall@k" in printed
    decision = json.loads((run_dir / "decision.json").read_text())
    gates = {g["gate"]: g["status"] for g in decision["variants"]["P"]["gates"]}
    assert gates["min_neighbour_recall"] == "fail"
    assert decision["recommended"] == "Q"


def test_a_reference_that_cannot_embed_leaves_the_run_decidable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run(tmp_path)
    variants = [Variant.from_embeddings("R", Table({})), Variant.from_embeddings("Q", Table(CLOSE))]
    summary = add_embeddings(run_dir, variants, options=EmbeddingOptions(k=1, progress=False))
    assert "embeddings not measured: variant R: embedding 'c0'" in capsys.readouterr().err
    written = read_summary(run_dir)
    assert [v.embeddings for v in written.variants] == [None, None, None]
    assert all((v.embeddings_error or "").startswith("not measured: variant R") for v in written.variants)
    assert summary.variants[1].embeddings_error == written.variants[1].embeddings_error
    decision = decide(run_dir, Gates(min_neighbour_recall=0.8, min_cases=1, min_slice_cases=1))
    gate = {g.gate: g.status for g in decision.variants["Q"].gates}
    assert gate["min_neighbour_recall"] == "not_measured"
