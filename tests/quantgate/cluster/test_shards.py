"""A server variant's cases split between Ray tasks (`shards`): how they are dealt, how the
variant's figures are put back together, and a run on a local Ray with the `slow-server` fake."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import tests.quantgate.evaluate.slow_backend  # noqa: F401 (registers the `slow` and `slow-server` backends)
from evaluators import CaseScorer
from graphs.evaluation import CaseOutcome, score_case
from graphs.extraction import ExtractionResult
from quantgate.cluster import RayExecutor
from quantgate.cluster._shards import ShardEnded, merged, shard_jobs, why_not_split
from quantgate.evaluate import RunOptions
from quantgate.evaluate.scheduler._executor import LocalExecutor
from quantgate.evaluate.scheduler._variant import VariantJob, VariantRun
from quantgate.inputs._dataset import Case, load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from quantgate.rundir._summary import ShardPlacement, VariantEntry, VariantMetadata
from tests.fakes import GOOD, SCHEMA
from tests.quantgate.cluster.conftest import comparable_records, run_six, slow_variants

_CASES = tuple(Case(id=f"c{i}", text=f"case {i}", expected=GOOD) for i in range(5))


def _outcome(case_id: str, output_tokens: int) -> CaseOutcome:
    result = ExtractionResult(
        record=GOOD,
        raw=json.dumps(GOOD),
        valid=True,
        attempts=[{"ttft_s": 0.1, "total_s": 1.0, "input_tokens": 10, "output_tokens": output_tokens}],  # type: ignore[typeddict-item]
    )
    case = {"id": case_id, "text": "", "expected": GOOD, "tags": []}
    return score_case(case, result, scorer=CaseScorer(schema=SCHEMA), reference_records={case_id: GOOD})  # type: ignore[arg-type]


def _job(backend: str = "slow-server", shards: int = 2, **changes: object) -> VariantJob:
    dataset = load_dataset(Path(__file__).parents[3] / "datasets" / "invoices")
    variant = Variant(name="cand", backend=backend, model="none", shards=shards)
    job = VariantJob(
        variant=variant,
        dataset=dataset,
        cases=_CASES,
        run_dir=Path("unused"),
        reference_records={c.id: GOOD for c in _CASES},
        options=RunOptions(progress=False),
    )
    return replace(job, **changes)  # type: ignore[arg-type]


def test_the_cases_not_recorded_are_dealt_in_turn_between_the_shards():
    job = _job(shards=2, prior=(_outcome("c0", 5),))
    parts = shard_jobs(job)
    assert [[c.id for c in part.cases] for part in parts] == [["c1", "c3"], ["c2", "c4"]]
    assert all(part.prior == () for part in parts)
    assert [[c.id for c in part.cases] for part in shard_jobs(_job(shards=9))] == [[c.id] for c in _CASES]


@pytest.mark.parametrize(
    ("job", "why"),
    [
        (_job(backend="slow"), "is for variants served by a server"),
        (_job(options=RunOptions(progress=False, sequential=True)), "a sequential run judges"),
    ],
)
def test_a_variant_that_cannot_be_split_runs_in_one_task_saying_why(job, why):
    assert why in str(why_not_split(job))
    assert shard_jobs(job) == [job]
    assert why_not_split(_job(shards=1)) is None


def _shard(job: VariantJob, new: tuple[CaseOutcome, ...], *, wall_s: float | None, memory_mb: float | None,
           failed: str | None = None) -> ShardEnded:  # fmt: skip
    entry = VariantEntry(
        name="cand", backend="slow-server", quantization="Q4_K_M", wall_s=wall_s, memory_mb=memory_mb,
        model_memory_mb=memory_mb and memory_mb / 2, concurrency=2,
    )  # fmt: skip
    metadata = VariantMetadata(name="cand", backend="slow-server", hardware={"hostname": f"node-{memory_mb}"})
    run = VariantRun(entry=entry, records={}, metadata=metadata, scores={}, case_ids=[o.case_id for o in new])
    placement = ShardPlacement(hostname=f"node-{memory_mb}", case_ids=[o.case_id for o in (*job.prior, *new)])
    return ShardEnded(job=job, new=new, run=None if failed else run, error=failed, placement=placement)


def test_the_variants_figures_are_put_back_together_from_its_shards():
    whole = _job(prior=(_outcome("c0", 7),))  # read back from an earlier run
    first, second = shard_jobs(whole)
    second = replace(second, prior=(_outcome("c2", 30),))  # sent by a task of its that died
    shards = [
        _shard(first, (_outcome("c1", 10), _outcome("c3", 20)), wall_s=2.0, memory_mb=100.0),
        _shard(second, (_outcome("c4", 30),), wall_s=1.0, memory_mb=150.0),
    ]
    evaluated = merged(whole, shards, {"CPU": 1.0, "ollama": 0.5})
    assert evaluated.error is None
    assert evaluated.run is not None
    entry = evaluated.run.entry
    assert entry.cases == 5
    assert entry.complete
    assert entry.field_accuracy == 1.0
    assert entry.agreement_with_reference == 1.0
    assert entry.wall_s == 3.0  # the tasks' wall times added up
    assert entry.throughput_tokens_per_s == pytest.approx((10 + 20 + 30) / 3.0)  # their new cases only
    assert entry.resumed_cases == 2  # c0 read back, c2 from the dead task
    assert (entry.memory_mb, entry.model_memory_mb) == (150.0, 75.0)  # the largest shard's
    assert evaluated.run.case_ids == ["c0", "c1", "c2", "c3", "c4"]
    assert evaluated.run.metadata.hardware == {"hostname": "node-100.0"}
    placement = evaluated.placement
    assert [s.case_ids for s in placement.shards] == [["c1", "c3"], ["c2", "c4"]]
    assert placement.resources == {"CPU": 1.0, "ollama": 0.5}


def test_a_shard_that_failed_fails_its_variant_naming_it():
    whole = _job()
    first, second = shard_jobs(whole)
    shards = [
        _shard(first, (_outcome("c0", 10),), wall_s=1.0, memory_mb=100.0),
        _shard(second, (), wall_s=None, memory_mb=None, failed="its Ray task died on node-2"),
    ]
    evaluated = merged(whole, shards, {"CPU": 1.0})
    assert evaluated.run is None
    assert evaluated.error == "shard 2 of 2: its Ray task died on node-2"
    assert len(evaluated.placement.shards) == 2


@pytest.mark.slow
def test_a_sharded_run_has_the_local_executors_records_and_figures(ray_cluster, invoices, tmp_path):
    # the cluster has ollama = 1: the two shards, each asking for half of it, run side by side
    variants = slow_variants(
        "ref", "cand", backend="slow-server", delay_s=0.4, resources={"CPU": 0.5, "ollama": 0.5}
    )
    sharded = VariantSet(
        reference="ref",
        variants=[variants.variants[0], variants.variants[1].model_copy(update={"shards": 2})],
    )
    local = run_six(invoices, variants, tmp_path / "local", LocalExecutor())
    with RayExecutor.connect(progress=False) as executor:
        run_dir = run_six(invoices, sharded, tmp_path / "ray", executor)
    assert comparable_records(run_dir) == comparable_records(local)
    run, local_run = load_run(run_dir), load_run(local)
    entry, local_entry = run.summary.entry("cand"), local_run.summary.entry("cand")
    assert entry is not None
    assert local_entry is not None
    same = {"cases", "complete", "field_accuracy", "format_validity", "agreement_with_reference", "errors"}
    assert entry.model_dump(include=same) == local_entry.model_dump(include=same)
    placement = run.variants.by_name()["cand"].placement
    assert placement is not None
    (a, b) = placement.shards
    assert sorted([*a.case_ids, *b.case_ids]) == [f"c{i}" for i in range(6)]
    assert len(a.case_ids) == len(b.case_ids) == 3
    assert a.started_at
    assert a.ended_at
    assert b.started_at
    assert b.ended_at
    assert max(a.started_at, b.started_at) < min(a.ended_at, b.ended_at)  # side by side
    assert all(s.hardware and s.hardware["hostname"] for s in (a, b))
    assert run.variants.by_name()["ref"].placement.shards == []  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_shard_that_keeps_dying_fails_its_variant_and_the_others_records_are_kept(
    ray_cluster, invoices, tmp_path
):
    variants = slow_variants("ref", "cand", backend="slow-server", resources={"CPU": 0.5, "ollama": 0.5})
    doomed = variants.variants[1].model_copy(
        update={"shards": 2, "options": {"delay_s": 0.05, "die_after": 1}}
    )
    with RayExecutor.connect(retries=0, progress=False) as executor:
        run_dir = run_six(
            invoices, VariantSet(reference="ref", variants=[variants.variants[0], doomed]), tmp_path, executor
        )
    entry = load_run(run_dir).summary.entry("cand")
    assert entry is not None
    assert entry.status == "skipped"
    assert "shard 1 of 2: its Ray task died" in str(entry.error)
    assert "shard 2 of 2: its Ray task died" in str(entry.error)
    # one case from each shard
    assert len([r for r in read_records(run_dir) if r.variant == "cand"]) == 2
