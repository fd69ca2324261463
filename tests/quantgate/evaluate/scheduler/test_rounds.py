"""Runs in interleaved rounds: every variant on the same cases, one variant at a time, each loaded
once and warmed up, its load and warm-up kept out of the case figures."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from graphs.streamed import ModelCallError
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate.scheduler import _executor as scheduler_executor
from quantgate.evaluate.scheduler._pool import PROCESS_OVERHEAD_MB, warm_capacity
from quantgate.evaluate.scheduler._warm_up import WARM_UP_TEXT
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import RECORDS_FILE
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import load_run, read_records
from tests.fakes import GOOD, SCHEMA, QueuedChatModel
from tests.quantgate.evaluate import slow_backend

WRONG = json.dumps({**GOOD, "currency": "USD"})


def _dataset(root: Path, cases: int) -> Dataset:
    lines = [Case(id=f"c{i:02d}", text=f"case <{i}>", expected=GOOD, tags=("lang:en",)) for i in range(cases)]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _model(**by_text: Any) -> QueuedChatModel:
    return QueuedChatModel(outputs=[json.dumps(GOOD)], by_text=by_text)


def _chat_variants(**models: QueuedChatModel) -> VariantSet:
    """A variant per chat model, in the order given; the first is the reference."""
    variants = [Variant.from_chat_model(name, model) for name, model in models.items()]
    return VariantSet(reference=variants[0].name, variants=variants)


def _options(tmp_path: Path, *, round_size: int, **more: Any) -> RunOptions:
    """A run in rounds of `round_size` cases under tmp_path/runs, quiet, without token fidelity."""
    return RunOptions(
        out=tmp_path / "runs", progress=False, token_fidelity=False, round_size=round_size, **more
    )


class _WarmUp(QueuedChatModel):
    """Answers the warm-up prompt after `warm_up_s`, or refuses it with `warm_up_error` (as a
    busy server does); the cases at once."""

    warm_up_s: float = 0.0
    warm_up_error: ModelCallError | None = None

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        if any(WARM_UP_TEXT in str(m.content) for m in messages):
            if self.warm_up_error is not None:
                raise self.warm_up_error
            time.sleep(self.warm_up_s)
        yield from super()._answer(messages)


def _records_in_file_order(run_dir: Path) -> list[CaseRecord]:
    return list(read_records(run_dir))


def test_variants_take_turns_round_by_round_on_the_same_cases(tmp_path):
    dataset = _dataset(tmp_path / "d", 25)
    variants = _chat_variants(ref=_model(), a=_model(**{"case <3>": WRONG}), b=_model())
    options = _options(tmp_path, round_size=10)
    run_dir = run_evaluation(dataset, variants, options=options)
    lines = _records_in_file_order(run_dir)
    # each round: the reference's 10 cases, then a's, then b's; the last round has 5
    blocks = [(r.variant, n) for _, n, r in _blocks(lines)]
    assert blocks == [("ref", 10), ("a", 10), ("b", 10)] * 2 + [("ref", 5), ("a", 5), ("b", 5)]
    by_variant = {name: [r.case_id for r in lines if r.variant == name] for name in ("ref", "a", "b")}
    assert by_variant["ref"] == by_variant["a"] == by_variant["b"]
    assert len(set(by_variant["ref"])) == 25
    summary = load_run(run_dir).summary
    assert [(e.name, e.cases, e.complete, e.loads) for e in summary.variants] == [
        ("ref", 25, True, 1),
        ("a", 25, True, 1),
        ("b", 25, True, 1),
    ]
    assert summary.entry("a").field_accuracy_delta == pytest.approx(-1 / 4 / 25)  # type: ignore[union-attr]


def _blocks(lines: list[CaseRecord]) -> list[tuple[int, int, CaseRecord]]:
    """(start, length, first record) of each run of consecutive records of one variant."""
    found: list[tuple[int, int, CaseRecord]] = []
    for index, record in enumerate(lines):
        if found and found[-1][2].variant == record.variant:
            start, length, first = found[-1]
            found[-1] = (start, length + 1, first)
        else:
            found.append((index, 1, record))
    return found


def test_load_and_warm_up_are_measured_apart_from_the_cases(tmp_path):
    dataset = _dataset(tmp_path / "d", 8)
    variants = _chat_variants(
        ref=_WarmUp(outputs=[json.dumps(GOOD)], warm_up_s=0.6),
        cand=_WarmUp(outputs=[json.dumps(GOOD)], warm_up_s=0.6),
    )
    options = _options(tmp_path, round_size=4)
    summary = load_run(run_evaluation(dataset, variants, options=options)).summary
    for entry in summary.variants:
        assert entry.cold_first_token_s is not None
        assert entry.cold_first_token_s >= 0.6  # the warm-up's first token, timed apart
        assert entry.ttft_s_p95 is not None
        assert entry.ttft_s_p95 < 0.3  # no case paid for it
        assert entry.latency_s_p95 is not None
        assert entry.latency_s_p95 < 0.3
        assert entry.load_s is not None
        assert entry.load_s < 0.6
        assert entry.wall_s is not None
        assert entry.wall_s < 0.6 * 2  # the rounds' wall time, not the warm-up's
    assert summary.evaluation_s is not None
    assert summary.evaluation_s < 1.2  # the budget counts case evaluation only


def test_a_warm_up_that_fails_leaves_its_figure_missing_and_the_cases_run(tmp_path):
    dataset = _dataset(tmp_path / "d", 4)
    busy = ModelCallError("busy", "server busy (503)", retryable=True)
    variants = _chat_variants(ref=_model(), cand=_WarmUp(outputs=[json.dumps(GOOD)], warm_up_error=busy))
    options = _options(tmp_path, round_size=4)
    summary = load_run(run_evaluation(dataset, variants, options=options)).summary
    ref, cand = summary.variants
    assert ref.cold_first_token_s is not None
    assert (cand.status, cand.cold_first_token_s, cand.cases, cand.errors) == ("ok", None, 4, 0)
    assert cand.format_validity == 1.0


def test_worker_processes_stay_warm_across_rounds(tmp_path):
    dataset, _ = slow_backend.write_inputs(tmp_path, cases=12, delay_s=0.01)
    data = load_dataset(dataset)
    slow = slow_backend.slow_variant
    variants = VariantSet(reference="ref", variants=[slow("ref", delay_s=0.01), slow("cand", delay_s=0.01)])
    options = _options(tmp_path, round_size=4)
    run = load_run(run_evaluation(data, variants, options=options))
    assert [(e.name, e.cases, e.loads) for e in run.summary.variants] == [("ref", 12, 1), ("cand", 12, 1)]
    for entry in run.summary.variants:
        assert entry.memory_mb is not None  # each worker process's own RSS, sampled over its life
        assert entry.memory_process == "quantgate worker"
    assert [line.runtime for line in run.variants.variants] == [{"name": "slow fake", "version": "0"}] * 2


def test_when_memory_holds_one_variant_each_loads_in_turn(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(scheduler_executor, "warm_capacity", lambda variants: 1)
    dataset = _dataset(tmp_path / "d", 12)
    variants = _chat_variants(ref=_model(), cand=_model())
    options = _options(tmp_path, round_size=4)
    summary = load_run(run_evaluation(dataset, variants, options=options)).summary
    assert [(e.name, e.cases, e.loads) for e in summary.variants] == [("ref", 12, 3), ("cand", 12, 3)]
    assert "memory holds 1 of the 2 variants at once" in capsys.readouterr().err


def test_warm_capacity_counts_what_fits_the_largest_first():
    small = Variant(name="s", backend="llamacpp", model="s.gguf", file_size_bytes=100 * 2**20)
    large = Variant(name="l", backend="llamacpp", model="l.gguf", file_size_bytes=1000 * 2**20)
    need = PROCESS_OVERHEAD_MB
    assert warm_capacity([small, large], available_mb=(1100 + 2 * need) / 0.8 + 1) == 2
    assert warm_capacity([small, large], available_mb=(1000 + need) / 0.8 + 1) == 1  # the large one alone
    assert warm_capacity([small, large], available_mb=10) == 1  # at least one, loaded in turn
    server = Variant(name="o", backend="ollama", model="gemma3:1b")
    assert warm_capacity([server] * 30, available_mb=32_000) == 30  # a client holds no weights


def test_a_candidate_that_cannot_load_is_skipped_and_the_others_go_on(tmp_path):
    dataset = _dataset(tmp_path / "d", 8)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", _model()),
            Variant(name="broken", backend="llamacpp", model=str(broken)),
            Variant.from_chat_model("good", _model()),
        ],
    )
    options = _options(tmp_path, round_size=4)
    summary = load_run(run_evaluation(dataset, variants, options=options)).summary
    statuses = {e.name: (e.status, e.cases) for e in summary.variants}
    assert statuses == {"ref": ("ok", 8), "broken": ("skipped", None), "good": ("ok", 8)}
    assert "broken.gguf" in (summary.entry("broken").error or "")  # type: ignore[union-attr]


@pytest.mark.parametrize("sequential", [False, True])
def test_the_reference_runs_its_cases_when_every_candidate_is_skipped(tmp_path, sequential):
    dataset = _dataset(tmp_path / "d", 8)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", _model()),
            Variant(name="broken", backend="llamacpp", model=str(broken)),
        ],
    )
    options = _options(tmp_path, round_size=4, sequential=sequential)
    run_dir = run_evaluation(dataset, variants, options=options)
    summary = load_run(run_dir).summary
    # as in a run of the reference alone: its 8 cases, in two rounds, stopped when they ran out
    assert {e.name: (e.status, e.cases) for e in summary.variants} == {
        "ref": ("ok", 8),
        "broken": ("skipped", None),
    }
    ref = summary.entry("ref")
    assert ref is not None
    # not "settled" (every candidate settled), which no candidate was
    assert (ref.sequential.stopped if ref.sequential else None) == ("cases" if sequential else None)
    assert sorted(r.case_id for r in read_records(run_dir)) == [f"c{i:02d}" for i in range(8)]


def test_a_candidate_whose_worker_dies_mid_run_keeps_its_records_and_is_skipped(tmp_path):
    dataset, _ = slow_backend.write_inputs(tmp_path, cases=12, delay_s=0.0)
    data = load_dataset(dataset)
    slow = slow_backend.slow_variant
    variants = VariantSet(
        reference="ref", variants=[slow("ref", delay_s=0.0), slow("dies", delay_s=0.0, die_after=4)]
    )
    options = _options(tmp_path, round_size=4, concurrency=1)
    run_dir = run_evaluation(data, variants, options=options)
    summary = load_run(run_dir).summary
    assert [(e.name, e.status) for e in summary.variants] == [("ref", "ok"), ("dies", "skipped")]
    assert "worker process died" in (summary.entry("dies").error or "")  # type: ignore[union-attr]
    kept = [r.case_id for r in read_records(run_dir) if r.variant == "dies"]
    assert kept == ["c0", "c1", "c2", "c3"]  # the first round's records stay
    # the reference goes on alone to the run's last case, as in a run of the reference only
    assert [r.case_id for r in read_records(run_dir) if r.variant == "ref"] == [f"c{i}" for i in range(12)]
    assert (run_dir / RECORDS_FILE).is_file()


def test_a_sequential_run_settles_each_candidate_on_the_cases_the_reference_ran(tmp_path):
    dataset = _dataset(tmp_path / "d", 60)
    wrong = json.dumps({"vendor": "x", "total": 1.0, "issued": "1999-01-01", "currency": "JPY"})
    variants = _chat_variants(ref=_model(), same=_model(), broken=QueuedChatModel(outputs=[wrong]))
    gates = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None)
    options = _options(tmp_path, round_size=10, sequential=True, gates=gates)
    run_dir = run_evaluation(dataset, variants, options=options)
    lines = _records_in_file_order(run_dir)
    blocks = [(r.variant, n) for _, n, r in _blocks(lines)]
    # broken fails after the first round and stops; same passes after the second, then nobody needs more
    assert blocks == [("ref", 10), ("same", 10), ("broken", 10), ("ref", 10), ("same", 10)]
