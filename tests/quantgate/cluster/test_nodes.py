"""A run in rounds over warm actors on a Ray cluster of two nodes (`ray.cluster_utils.Cluster`: two
raylets on this machine, each with a resource of its own, `node_a` and `node_b`): the candidates on
different nodes run a round at the same time, those sharing a node in turn, and the run records and
decides as a local run at concurrency 1."""

from __future__ import annotations

import os
import platform
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quantgate.cluster import RayExecutor
from quantgate.cluster._connection import normal_priority_workers
from quantgate.cluster._node_capacity import available_mb
from quantgate.evaluate import RunOptions, run_evaluation
from quantgate.evaluate._evaluation_run import resume_evaluation
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.evaluate.scheduler._pool import MEMORY_SHARE, PROCESS_OVERHEAD_MB
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import latest_records, load_run, read_records
from tests.quantgate.cluster.conftest import comparable_records
from tests.quantgate.cluster.test_actors import GATES, WRONG
from tests.quantgate.cluster.test_executor import _judged
from tests.quantgate.evaluate.slow_backend import write_inputs

pytestmark = pytest.mark.slow

DELAY_S = 0.05
"""Each fake answer's time: a candidate's round of 10 cases takes about half a second."""
NODES = {"ref": "node_a", "same": "node_a", "broken": "node_b", "twin": "node_b"}
"""Where each variant's actor goes: `same` beside the reference, `broken` and `twin` on the other node."""


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[Any]:
    """Ray connected to a cluster of two nodes of one CPU each, `node_a` (the head) and `node_b`."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'quantgate[cluster]'")
    from ray.cluster_utils import Cluster

    with normal_priority_workers():
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "resources": {"node_a": 1}, "include_dashboard": False},
        )
        cluster.add_node(num_cpus=1, resources={"node_b": 1})
        ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        cluster.shutdown()


def _variants(calls: Path) -> VariantSet:
    """A reference, a candidate answering as it does beside it, and on the other node one answering
    every field wrong and another answering as the reference; each logs its calls under `calls`."""
    calls.mkdir(parents=True)
    variants = []
    for name, node in NODES.items():
        options: dict[str, Any] = {"delay_s": DELAY_S, "call_log": str(calls / f"{name}.log")}
        if name == "broken":
            options["answer"] = WRONG
        variants.append(
            Variant(name=name, backend="slow", model="none", options=options, resources={node: 1})
        )
    return VariantSet(reference="ref", variants=variants)


def _sequential(dataset: Path, out: Path, executor: VariantExecutor) -> Path:
    """A sequential run at concurrency 1 in rounds of 10 cases: `broken` settles `fail` after 10,
    `same` and `twin` `pass` after 20."""
    options = RunOptions(
        out=out / "runs", progress=False, sequential=True, gates=GATES, round_size=10, concurrency=1,
        token_fidelity=False,
    )  # fmt: skip
    variants = _variants(out / "calls")
    return run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)


def _calls(run: Path, name: str) -> list[tuple[float, float]]:
    """The variant's calls (warm-up included) as (start, end) times."""
    lines = (run / "calls" / f"{name}.log").read_text(encoding="utf-8").splitlines()
    return [(float(start), float(end)) for start, end in (line.split() for line in lines)]


def _overlap(run: Path, first: str, second: str) -> float:
    """The seconds during which a call of `first` and one of `second` ran at once, summed."""
    return sum(
        max(0.0, min(a_end, b_end) - max(a_start, b_start))
        for a_start, a_end in _calls(run, first)
        for b_start, b_end in _calls(run, second)
    )


def test_candidates_on_two_nodes_run_a_round_at_once_and_decide_as_a_local_run(two_nodes, tmp_path):
    dataset, _ = write_inputs(tmp_path / "inputs", cases=40, delay_s=DELAY_S)
    local = _sequential(dataset, tmp_path / "local", LocalExecutor())
    with RayExecutor.connect(progress=False) as executor:
        distributed = _sequential(dataset, tmp_path / "ray", executor)
    ray_out = tmp_path / "ray"
    # on different nodes side by side (two rounds of 10 cases each: about a second together) ...
    assert _overlap(ray_out, "same", "broken") > 0.2
    assert _overlap(ray_out, "same", "twin") > 0.4
    # ... sharing a node in turn, and no candidate beside the reference's part of a round
    assert _overlap(ray_out, "broken", "twin") == 0.0
    assert all(_overlap(ray_out, "ref", name) == 0.0 for name in ("same", "broken", "twin"))
    assert _overlap(tmp_path / "local", "same", "broken") == 0.0  # locally, all in turn
    # the same records, sequence and verdicts as the local run
    assert comparable_records(distributed) == comparable_records(local)
    counts = {name: len(r) for name, r in latest_records(read_records(distributed)).items()}
    assert counts == {"ref": 20, "same": 20, "broken": 10, "twin": 20}
    assert _judged(distributed) == _judged(local)
    run = load_run(distributed)
    settled = {e.name: e.sequential and e.sequential.settled for e in run.summary.variants}
    assert settled == {"ref": None, "same": "pass", "broken": "fail", "twin": "pass"}
    nodes = {v.name: v.placement and v.placement.node_id for v in run.variants.variants}
    assert nodes["same"] == nodes["ref"] != nodes["broken"] == nodes["twin"]
    # the load of each part read on the node that ran it, and named so
    parts = run.summary.machine_load or []
    assert {(p.variant, p.round) for p in parts} == {
        ("ref", 1), ("same", 1), ("broken", 1), ("twin", 1), ("ref", 2), ("same", 2), ("twin", 2)
    }  # fmt: skip
    assert all(p.node_id == nodes[p.variant] and p.host == platform.node() for p in parts)
    assert all(p.node_id is None and p.host is None for p in load_run(local).summary.machine_load or [])


def test_warm_capacity_is_judged_on_each_variants_node(two_nodes, tmp_path):
    node_ids = {
        name: next(str(n["NodeID"]) for n in two_nodes.nodes() if name in n["Resources"])
        for name in ("node_a", "node_b")
    }
    variants = _variants(tmp_path / "calls").variants
    with RayExecutor.connect(progress=False) as executor:
        capacity = executor.warm_capacity(variants)
    assert capacity.machine_of == {name: node_ids[node] for name, node in NODES.items()}
    # each node judged from its own memory, for its own two variants (600 MiB each: both fit)
    assert capacity.machines == {node_ids["node_a"]: 2, node_ids["node_b"]: 2}
    assert available_mb() > 2 * PROCESS_OVERHEAD_MB / MEMORY_SHARE  # what that figure assumes


def _interrupt_when_both_nodes_run(out: Path) -> None:
    """Once `same` and `broken` (one on each node) have recorded 2 cases each, send SIGINT, as Ctrl-C."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        files = list(out.glob("*/records.jsonl"))
        text = files[0].read_text().replace(" ", "") if files else ""
        if text.count('"variant":"same"') >= 2 and text.count('"variant":"broken"') >= 2:
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.02)


def test_ctrl_c_while_two_nodes_run_leaves_a_run_that_resumes_to_the_same_decision(two_nodes, tmp_path):
    dataset, _ = write_inputs(tmp_path / "inputs", cases=40, delay_s=DELAY_S)
    watcher = threading.Thread(target=_interrupt_when_both_nodes_run, args=(tmp_path / "runs",))
    watcher.start()
    with RayExecutor.connect(progress=False) as executor, pytest.raises(KeyboardInterrupt):
        _sequential(dataset, tmp_path, executor)
    watcher.join()
    (run_dir,) = (tmp_path / "runs").iterdir()
    run = load_run(run_dir)
    # the actors stopped under the nodes' threads are not taken for failed variants, and the thread
    # of a node whose variant was stopped loads none after it (its cases would be recorded twice)
    assert run.summary.status == "interrupted"
    assert [e.name for e in run.summary.variants if e.error is not None] == []
    with RayExecutor.connect(progress=False) as executor:
        resume_evaluation(run_dir, progress=False, executor=executor)
    records = list(read_records(run_dir))
    assert len(records) == len({(r.variant, r.case_id) for r in records}) == 70  # each case once
    settled = {e.name: e.sequential and e.sequential.settled for e in load_run(run_dir).summary.variants}
    assert settled == {"ref": None, "same": "pass", "broken": "fail", "twin": "pass"}
