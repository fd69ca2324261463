"""Each result type is defined once: the run-file models that carry an evaluator's result
subclass its type, keep the keys of the files where they were, and are built from the result."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from evaluators.aggregate import DatasetScore
from evaluators.embeddings import RetrievalSummary
from evaluators.fidelity import TokenFidelitySummary
from evaluators.latency import LatencySummary
from evaluators.loadtest import LoadRequest, LoadStats
from evaluators.memory import MemorySummary
from quantgate.rundir._embedding_files import EmbeddingEntry
from quantgate.rundir._lines import LoadLine
from quantgate.rundir._loadtest_section import LoadLevelEntry
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry

CARRIED: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (LoadLevelEntry, LoadStats),
    (LoadLine, LoadRequest),
    (TokenFidelityEntry, TokenFidelitySummary),
    (EmbeddingEntry, RetrievalSummary),
    (VariantEntry, DatasetScore),
    (VariantEntry, LatencySummary),
    (VariantEntry, MemorySummary),
]

REQUEST = LoadRequest(
    level="x4", slot=2, case_id="c1", started_s=0.5, ttft_s=0.1, total_s=1.25,
    output_tokens=30, inter_token_s=0.02, valid=True,
)  # fmt: skip


@pytest.mark.parametrize(("run_model", "result"), CARRIED, ids=lambda t: t.__name__)
def test_a_run_model_subclasses_the_evaluators_result_type(
    run_model: type[BaseModel], result: type[BaseModel]
) -> None:
    assert issubclass(run_model, result)
    assert result.model_config.get("frozen") is True  # the evaluator's result never changes
    assert run_model.model_config.get("frozen") is False  # a run file is rewritten as the run goes
    assert run_model.model_config.get("extra") == "forbid"
    assert run_model.__hash__ is None  # mutable, so not hashable as its frozen result type is


def test_a_load_line_keeps_its_keys_in_order_and_comes_from_the_request() -> None:
    line = LoadLine.extending(REQUEST, variant="Q4")
    assert list(line.model_dump()) == [
        "format_version", "variant", "level", "slot", "case_id", "started_s", "ttft_s", "total_s",
        "output_tokens", "inter_token_s", "valid", "error_kind", "error", "queued_s",
    ]  # fmt: skip
    assert line.model_dump(exclude={"format_version", "variant"}) == REQUEST.model_dump()


def test_a_load_level_entry_has_how_it_ran_first_then_the_level_statistics() -> None:
    stats = LoadStats(
        requests=2, answered=2, errors=0, errors_by_kind={}, wall_s=2.0, ttft_s_p50=0.1, ttft_s_p95=0.2,
        ttft_s_p99=0.2, inter_token_s_mean=0.02, inter_token_s_p95=0.03, request_tokens_per_s_p50=24.0,
        aggregate_tokens_per_s=30.0, requests_per_s=1.0,
    )  # fmt: skip
    entry = LoadLevelEntry.extending(stats, name="x2", concurrency=2, instances=1, rss_peak_mb=None)
    how = ["name", "concurrency", "instances", "rss_peak_mb", "arrivals", "rate_per_s", "seed"]
    assert list(entry.model_dump())[: len(how) + 1] == [*how, "requests"]
    assert entry.arrivals == "closed"
    assert entry.model_dump(exclude=set(how)) == stats.model_dump()


def test_extending_refuses_a_model_of_another_result_and_a_result_field_given_again() -> None:
    with pytest.raises(TypeError, match="LoadLevelEntry does not subclass LoadRequest"):
        LoadLevelEntry.extending(REQUEST, name="x1", concurrency=1, instances=1, rss_peak_mb=None)
    with pytest.raises(TypeError, match=r"^case_id: a field of LoadRequest, given again$"):
        LoadLine.extending(REQUEST, variant="Q4", case_id="c2")


def test_a_run_model_refuses_a_key_its_result_type_does_not_have() -> None:
    with pytest.raises(ValidationError, match="surprise"):
        LoadLine.model_validate({**LoadLine.extending(REQUEST, variant="Q4").model_dump(), "surprise": 1})


def test_a_skipped_variant_has_no_figures_not_zeros() -> None:
    entry = VariantEntry(name="Q2", backend="ollama", status="skipped", error="no server")
    dumped = entry.model_dump(mode="json")
    figures = {*DatasetScore.model_fields, *LatencySummary.model_fields, *MemorySummary.model_fields}
    assert figures <= dumped.keys()
    assert all(dumped[name] in (None, {}) for name in figures)
    entry.field_accuracy_delta = -0.1  # the run fills in what it learns after the variant
    assert entry.field_accuracy_delta == -0.1


def test_the_variant_entry_built_from_the_summaries_reads_back_equal() -> None:
    latency = LatencySummary(ttft_s_p50=0.2, cases_timed=3, tokens_per_s=40.0)
    memory = MemorySummary(memory_mb=512.0, model_memory_mb=400.0, file_size_mb=380.0)
    score = DatasetScore(cases=3, field_accuracy=0.75, fields={"a": 1.0, "b": 0.5})
    figures = {**score.model_dump(), **latency.model_dump(), **memory.model_dump()}
    entry = VariantEntry.model_validate({"name": "R", "backend": "test", **figures})
    assert VariantEntry.model_validate_json(entry.model_dump_json()) == entry
    timed = entry.model_dump(include=set(LatencySummary.model_fields))
    assert LatencySummary.model_validate(timed) == latency
