"""`RayExecutor` on a local Ray cluster, with the `slow` fake backend: the run directory its
warm actors write, actors that die, resources, and variants no node can take."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quantgate.cluster import RayExecutor
from quantgate.decide._recommendation import decide
from quantgate.evaluate.scheduler._executor import LocalExecutor
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from quantgate.rundir._summary import Placement
from tests.fakes import GOOD, QueuedChatModel
from tests.quantgate.cluster.conftest import comparable_records, run_six, slow_variants

pytestmark = pytest.mark.slow


_MEASURED_APART = {
    "ttft_s_p50", "ttft_s_p95", "latency_s_p50", "latency_s_p95", "tokens_per_s", "prompt_tokens_per_s",
    "server_tokens_per_s", "server_prompt_tokens_per_s", "wall_s", "throughput_tokens_per_s",
    "memory_mb", "model_memory_mb", "vram_mb", "load_s", "cold_first_token_s", "loads",
    "latency_against_reference",
}  # fmt: skip
"""Summary entry fields that are timed or measured on the process that ran the variant, not
scored from its records: they differ from one execution to the next, and between executors (the
local one evaluates in rounds with every variant kept loaded, and times its loads apart)."""


def _judged(run_dir: Path) -> dict[str, Any]:
    """What the decision on the run judged from its records (the default gates judge no latency or
    memory, and the measured latency and memory are left out)."""
    decision = decide(run_dir)
    judged = {"passes", "verdict", "gates", "comparison", "agreement"}
    counted = {"cases", "format_validity", "error_rate"}
    variants = {
        name: {
            **variant.model_dump(include=judged),
            "measured": None if variant.measured is None else variant.measured.model_dump(include=counted),
        }
        for name, variant in decision.variants.items()
    }
    return {**decision.model_dump(include={"outcome", "recommended", "exit_status"}), "variants": variants}


def _records(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The run's records without their timings, by (variant, case): the order of records.jsonl
    depends on the executor (rounds locally, variant after variant on Ray)."""
    records = comparable_records(run_dir)
    by_case = {(r["variant"], r["case_id"]): r for r in records}
    assert len(by_case) == len(records)  # one record per variant and case
    return by_case


def _figures(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each variant's summary entry without what is measured apart, by name: the local executor
    writes the reference's entry last."""
    return {e.name: e.model_dump(exclude=_MEASURED_APART) for e in load_run(run_dir).summary.variants}


def test_the_run_directory_is_the_local_executors(ray_cluster, invoices, tmp_path):
    variants = slow_variants("ref", "cand")
    local = run_six(invoices, variants, tmp_path / "local", LocalExecutor())
    with RayExecutor.connect(progress=False) as executor:
        distributed = run_six(invoices, variants, tmp_path / "ray", executor)
    assert _records(distributed) == _records(local)
    assert len(_records(distributed)) == 12
    figures = _figures(distributed)
    assert figures == _figures(local)
    assert (figures["cand"]["cases"], figures["cand"]["field_accuracy"]) == (6, 1.0)
    judged = _judged(distributed)
    assert judged == _judged(local)
    assert judged["variants"]["cand"]["gates"]  # the comparison above compared gates
    run = load_run(distributed)
    assert run.summary.status == "complete"
    placements = {v.name: v.placement for v in run.variants.variants}
    node = ray_cluster.get_runtime_context().get_node_id()
    assert {p.executor for p in placements.values() if p} == {"ray"}
    assert all(p is not None and p.node_id == node and p.attempts == 1 for p in placements.values())
    assert all(v.hardware and v.hardware["hostname"] for v in run.variants.variants)
    assert all(v.placement == Placement(executor="local") for v in load_run(local).variants.variants)


def test_an_actor_that_died_starts_again_for_the_rounds_cases_it_had_not_sent(
    ray_cluster, invoices, tmp_path
):
    variants = slow_variants("ref", "cand")
    crashing = variants.variants[1].model_copy(
        update={
            "options": {**variants.variants[1].options, "die_after": 3, "die_marker": str(tmp_path / "died")}
        }
    )
    variants = VariantSet(reference="ref", variants=[variants.variants[0], crashing])
    with RayExecutor.connect(retries=1, progress=False) as executor:
        run_dir = run_six(invoices, variants, tmp_path / "runs", executor)
    assert (tmp_path / "died").exists()  # the first actor did die
    records = [(r.variant, r.case_id) for r in read_records(run_dir)]
    assert sorted(records) == sorted({*records})  # each case recorded once
    assert len([r for r in records if r[0] == "cand"]) == 6
    run = load_run(run_dir)
    entry = run.summary.entry("cand")
    assert entry is not None
    assert entry.status == "ok"
    assert entry.complete
    assert entry.field_accuracy == 1.0
    placement = run.variants.by_name()["cand"].placement
    assert placement is not None
    assert placement.attempts == 2


def test_an_actor_that_keeps_dying_fails_its_variant_and_the_run_goes_on(ray_cluster, invoices, tmp_path):
    variants = slow_variants("ref", "doomed", "fine")
    doomed = variants.variants[1].model_copy(update={"options": {"delay_s": 0.05, "die_after": 2}})
    variants = VariantSet(reference="ref", variants=[variants.variants[0], doomed, variants.variants[2]])
    with RayExecutor.connect(retries=1, progress=False) as executor:
        run_dir = run_six(invoices, variants, tmp_path / "runs", executor)
    run = load_run(run_dir)
    doomed_entry, fine = run.summary.entry("doomed"), run.summary.entry("fine")
    assert doomed_entry is not None
    assert doomed_entry.status == "skipped"
    assert "its Ray actor died" in str(doomed_entry.error)
    assert "after 2 attempts" in str(doomed_entry.error)
    assert fine is not None
    assert fine.status == "ok"
    assert fine.complete
    assert run.summary.status == "complete"
    placement = run.variants.by_name()["doomed"].placement
    assert placement is not None
    assert placement.attempts == 2
    # what the dead actors had sent is kept, each case once
    doomed_records = [r.case_id for r in read_records(run_dir) if r.variant == "doomed"]
    assert doomed_records
    assert len(doomed_records) == len(set(doomed_records)) < 6


def test_warm_actors_asking_for_all_of_a_custom_resource_take_turns_without_blocking(
    ray_cluster, invoices, tmp_path
):
    # the cluster has ollama = 1: a warm actor holds none of it (variants take turns in rounds),
    # so a second one asking for all of it loads beside the first instead of waiting for it
    variants = slow_variants("ref", "a", "b", resources={"CPU": 0.5, "ollama": 1.0})
    with RayExecutor.connect(progress=False) as executor:
        run_dir = run_six(invoices, variants, tmp_path / "runs", executor)
    run = load_run(run_dir)
    assert run.summary.status == "complete"
    assert all(e.status == "ok" and e.complete for e in run.summary.variants)
    assert run.variants.by_name()["a"].placement.resources == {"CPU": 0.5, "ollama": 1.0}  # type: ignore[union-attr]


def test_a_variant_no_node_can_take_is_skipped_naming_what_it_asks(ray_cluster, invoices, tmp_path):
    variants = slow_variants("ref", "gpu")
    gpu = variants.variants[1].model_copy(update={"resources": {"GPU": 1}})
    variants = VariantSet(reference="ref", variants=[variants.variants[0], gpu])
    with RayExecutor.connect(progress=False) as executor:
        run_dir = run_six(invoices, variants, tmp_path / "runs", executor)
    entry = load_run(run_dir).summary.entry("gpu")
    assert entry is not None
    assert entry.status == "skipped"
    assert "no node of the Ray cluster has what its task declares (CPU 2, GPU 1)" in str(entry.error)
    assert "CPU 2" in str(entry.error).split("the nodes have:")[1]


def test_a_chat_model_given_from_python_is_evaluated_in_the_driver_meanwhile(ray_cluster, invoices, tmp_path):
    ref = slow_variants("ref").variants[0]
    chat = Variant.from_chat_model("chat", QueuedChatModel(outputs=[json.dumps(GOOD)]))
    variants = VariantSet(reference="ref", variants=[ref, chat])
    with RayExecutor.connect(progress=False) as executor:
        run_dir = run_six(invoices, variants, tmp_path / "runs", executor)
    run = load_run(run_dir)
    placements = {v.name: v.placement for v in run.variants.variants}
    assert placements["chat"] == Placement(executor="local")  # it cannot cross processes
    assert placements["ref"] is not None
    assert placements["ref"].executor == "ray"
    entry = run.summary.entry("chat")
    assert entry is not None
    assert entry.status == "ok"
    assert entry.complete
