"""A run in rounds over warm Ray actors (`--executor ray`) on a local Ray, with the `slow` fake
backend: the same sequential decision as a local run, and an actor killed mid-run."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from quantgate.cluster import RayExecutor
from quantgate.cluster._actor_worker import node_for
from quantgate.evaluate import RunOptions, run_evaluation
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import VariantSet
from quantgate.rundir._store import latest_records, load_run, read_records
from tests.quantgate.cluster.conftest import comparable_records, slow_variants
from tests.quantgate.cluster.test_executor import _judged
from tests.quantgate.evaluate.slow_backend import write_inputs

pytestmark = pytest.mark.slow

GATES = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None)
WRONG = {"vendor": "Nobody", "total": 99.0, "issued": "1999-01-01", "currency": "USD"}


def _sequential(dataset: Path, out: Path, executor: VariantExecutor) -> Path:
    """A sequential run at concurrency 1 of a reference, a candidate that answers as it does
    (settled `pass` after 20 cases) and one that answers every field wrong (`fail` after 10)."""
    variants = slow_variants("ref", "same", "broken", delay_s=0.01)
    broken = variants.variants[2].model_copy(update={"options": {"delay_s": 0.01, "answer": WRONG}})
    variants = VariantSet(reference="ref", variants=[*variants.variants[:2], broken])
    options = RunOptions(
        out=out,
        progress=False,
        sequential=True,
        gates=GATES,
        round_size=10,
        concurrency=1,
        token_fidelity=False,
    )
    return run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)


def test_a_sequential_run_over_actors_decides_as_the_local_run(ray_cluster, tmp_path):
    dataset, _ = write_inputs(tmp_path / "inputs", cases=40, delay_s=0.01)
    local = _sequential(dataset, tmp_path / "local", LocalExecutor())
    with RayExecutor.connect(progress=False) as executor:
        distributed = _sequential(dataset, tmp_path / "ray", executor)
    assert comparable_records(distributed) == comparable_records(local)
    records = latest_records(read_records(distributed))
    # the settled candidates stopped early: the broken one after one round, the other after two
    assert {name: len(r) for name, r in records.items()} == {"ref": 20, "same": 20, "broken": 10}
    judged = _judged(distributed)
    assert judged == _judged(local)
    assert judged["variants"]["broken"]["verdict"] == "fail"  # the comparison above compared verdicts
    run = load_run(distributed)
    assert run.summary.status == "complete"
    assert run.summary.evaluation_s is not None
    assert run.summary.evaluation_s > 0
    settled = {
        e.name: e.sequential and (e.sequential.settled, e.sequential.paired_cases)
        for e in run.summary.variants
    }
    assert settled == {"ref": (None, 20), "same": ("pass", 20), "broken": ("fail", 10)}
    node = ray_cluster.get_runtime_context().get_node_id()
    placements = {v.name: v.placement for v in run.variants.variants}
    assert all(
        p is not None and (p.executor, p.node_id, p.attempts) == ("ray", node, 1) for p in placements.values()
    )


def test_candidates_verify_the_references_answers_in_their_actors(ray_cluster, tmp_path):
    dataset, _ = write_inputs(tmp_path / "inputs", cases=6, delay_s=0.0)
    variants = slow_variants("ref", "cand", backend="slow-verifying")
    options = RunOptions(
        out=tmp_path / "runs", progress=False, token_fidelity=False, latency_cases=2, concurrency=1
    )
    with RayExecutor.connect(progress=False) as executor:
        run_dir = run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)
    obtained = {r.case_id: r.obtained for r in read_records(run_dir) if r.variant == "cand"}
    # the latency sample decoded in full, the others read from the reference's answers, as locally
    assert obtained == {"c0": "decoded", "c1": "decoded", "c2": "verified", "c3": "verified",
                        "c4": "verified", "c5": "verified"}  # fmt: skip
    cand = load_run(run_dir).summary.entry("cand")
    assert cand is not None
    assert (cand.verified_cases, cand.decoded_cases, cand.verification_missing) == (4, 2, None)


def _kill_an_actor_mid_round(out: Path, killed: list[int]) -> None:
    """Once the candidate has recorded 2 cases, SIGKILL the actor process running a round."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        files = list(out.glob("*/records.jsonl"))
        lines = files[0].read_text().splitlines() if files else []
        if sum('"variant":"cand"' in line.replace(" ", "") for line in lines) >= 2:
            for process in psutil.process_iter(["pid", "cmdline"]):
                if "VariantActor.run" in " ".join(process.info["cmdline"] or []):
                    os.kill(process.info["pid"], signal.SIGKILL)
                    killed.append(process.info["pid"])
                    return
        time.sleep(0.05)


def test_an_actor_killed_mid_round_is_started_again_for_the_cases_it_had_not_sent(ray_cluster, tmp_path):
    dataset, _ = write_inputs(tmp_path / "inputs", cases=6, delay_s=0.3)
    variants = slow_variants("ref", "cand", delay_s=0.3)
    options = RunOptions(out=tmp_path / "runs", token_fidelity=False, progress=False, concurrency=1)
    killed: list[int] = []
    killer = threading.Thread(target=_kill_an_actor_mid_round, args=(tmp_path / "runs", killed))
    killer.start()
    with RayExecutor.connect(retries=1, progress=False) as executor:
        run_dir = run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)
    killer.join()
    assert len(killed) == 1  # one actor process was killed, mid-round
    records = [(r.variant, r.case_id) for r in read_records(run_dir)]
    assert sorted(records) == sorted({*records})  # each case recorded once
    assert {name: sum(v == name for v, _ in records) for name in ("ref", "cand")} == {"ref": 6, "cand": 6}
    run = load_run(run_dir)
    assert run.summary.status == "complete"
    entry = run.summary.entry("cand")
    assert entry is not None
    assert (entry.status, entry.complete, entry.field_accuracy) == ("ok", True, 1.0)
    placement = run.variants.by_name()["cand"].placement
    assert placement is not None
    assert placement.attempts == 2


def test_a_restarted_actor_goes_to_another_node_when_one_has_what_it_declares():
    nodes = [
        {"NodeID": "a", "Alive": True, "Resources": {"CPU": 4.0}},
        {"NodeID": "b", "Alive": True, "Resources": {"CPU": 2.0, "GPU": 1.0}},
        {"NodeID": "c", "Alive": False, "Resources": {"CPU": 8.0, "GPU": 1.0}},
    ]
    assert node_for({"CPU": 2.0}, nodes, set()) == "a"
    assert node_for({"CPU": 2.0}, nodes, {"a"}) == "b"  # the node that lost it is avoided
    assert node_for({"CPU": 4.0}, nodes, {"a"}) == "a"  # unless no other has what it declares
    assert node_for({"GPU": 1.0}, nodes, {"b"}) == "b"
    assert node_for({"GPU": 2.0}, nodes, set()) is None
