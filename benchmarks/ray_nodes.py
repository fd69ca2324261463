"""Candidates on different Ray nodes run a round side by side: what it saves in wall time.

One sequential run (a reference; `same` and `twin`, answering as it does, settled `pass` after 20
cases; `broken`, answering every field wrong, `fail` after 10; rounds of 10 cases, concurrency 1)
three ways, in one sitting: with the local executor; over actors on a local cluster of two nodes
(`ray.cluster_utils.Cluster`, one CPU and one custom resource each) with the reference and `same`
on one node and `broken` and `twin` on the other; and over actors on that cluster with all four on
one node. The models are the tests' `slow` fake (`tests/quantgate/evaluate/slow_backend.py`), each
answer `--delay` seconds of sleep, so the figures are the scheduler's and not a model's (on one
machine, real models on two "nodes" would share its cores). It prints one JSON line: per layout the
run's `evaluation_s` (the budget's clock) and the wall time of `run_evaluation`, and whether the
records (timings left out) are the same in all three.

    python benchmarks/ray_nodes.py [--cases 40] [--delay 0.1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from quantgate.cluster import RayExecutor
from quantgate.cluster._connection import normal_priority_workers
from quantgate.evaluate import RunOptions, run_evaluation
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from tests.quantgate.evaluate.slow_backend import write_inputs

WRONG = {"vendor": "Nobody", "total": 99.0, "issued": "1999-01-01", "currency": "USD"}
TWO_NODES = {"ref": "node_a", "same": "node_a", "broken": "node_b", "twin": "node_b"}
ONE_NODE = dict.fromkeys(TWO_NODES, "node_a")
_TIMING = {"ttft_s", "total_s", "prompt_tokens_per_s", "generation_tokens_per_s", "attempt_timings"}


def _variants(nodes: dict[str, str], delay_s: float) -> VariantSet:
    variants = [
        Variant(name=name, backend="slow", model="none", resources={node: 1},
                options={"delay_s": delay_s, **({"answer": WRONG} if name == "broken" else {})})
        for name, node in nodes.items()
    ]  # fmt: skip
    return VariantSet(reference="ref", variants=variants)


def _run(dataset: Path, variants: VariantSet, out: Path, executor: VariantExecutor) -> dict[str, Any]:
    options = RunOptions(
        out=out, progress=False, sequential=True, round_size=10, concurrency=1, token_fidelity=False,
        gates=Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None),
    )  # fmt: skip
    started = time.perf_counter()
    run_dir = run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)
    wall = time.perf_counter() - started
    records = sorted((r.model_dump(exclude=_TIMING) for r in read_records(run_dir)),
                     key=lambda r: (r["variant"], r["case_id"]))  # fmt: skip
    evaluation = load_run(run_dir).summary.evaluation_s
    return {"evaluation_s": round(evaluation or 0.0, 2), "wall_s": round(wall, 2), "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dataset, _ = write_inputs(root / "inputs", cases=args.cases, delay_s=args.delay)
        runs = {"local": _run(dataset, _variants(TWO_NODES, args.delay), root / "local", LocalExecutor())}
        with normal_priority_workers():
            cluster = Cluster(
                initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"node_a": 1}}
            )
            cluster.add_node(num_cpus=1, resources={"node_b": 1})
            ray.init(address=cluster.address, log_to_driver=False)
        try:
            with RayExecutor.connect(progress=False) as executor:
                for layout, nodes in (("two_nodes", TWO_NODES), ("one_node", ONE_NODE)):
                    runs[layout] = _run(dataset, _variants(nodes, args.delay), root / layout, executor)
        finally:
            ray.shutdown()
            cluster.shutdown()  # type: ignore[no-untyped-call]
    same = runs["local"]["records"] == runs["two_nodes"]["records"] == runs["one_node"]["records"]
    figures = {layout: {k: v for k, v in run.items() if k != "records"} for layout, run in runs.items()}
    print(json.dumps({"cases": args.cases, "delay_s": args.delay, **figures, "same_records": same}))


if __name__ == "__main__":
    main()
