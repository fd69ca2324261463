"""A local Ray cluster for the tests of `RayExecutor`, started once per test module that asks.

It has 2 CPUs and one unit of a custom resource, `ollama`, as a node with an Ollama server
would declare. Ray removed `local_mode`, so this is a real local cluster (a raylet and worker
processes). It lives in the test process only while a module's tests use it: a Ray connected
there would be used by every executor, whatever address it is given. The tests skip when Ray is
not installed (`pip install 'quantgate[cluster]'`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quantgate.cluster._connection import normal_priority_workers
from quantgate.evaluate import RunOptions, run_evaluation
from quantgate.evaluate.scheduler._executor import VariantExecutor
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import read_records
from tests.quantgate.evaluate.slow_backend import write_inputs

OLLAMA_UNITS = 1.0
_TIMING = {"ttft_s", "total_s", "prompt_tokens_per_s", "generation_tokens_per_s", "attempt_timings"}
"""Record fields that differ from one execution to the next."""


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'quantgate[cluster]'")
    with normal_priority_workers():
        ray.init(num_cpus=2, resources={"ollama": OLLAMA_UNITS}, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def slow_variants(*names: str, backend: str = "slow", **options: Any) -> VariantSet:
    """`slow` fake variants (`tests/quantgate/evaluate/slow_backend.py`), the first the reference;
    `options` go to every variant, a `resources` key to their resources."""
    resources = options.pop("resources", {"CPU": 1})
    variants = [
        Variant(
            name=name,
            backend=backend,
            model="none",
            options={"delay_s": 0.05, **options},
            resources=resources,
        )
        for name in names
    ]
    return VariantSet(reference=names[0], variants=variants)


@pytest.fixture
def invoices(tmp_path: Path) -> Path:
    """A dataset of 6 invoice cases that every `slow` variant answers right."""
    dataset, _ = write_inputs(tmp_path / "inputs", cases=6, delay_s=0.05)
    return dataset


def run_six(dataset: Path, variants: VariantSet, out: Path, executor: VariantExecutor) -> Path:
    """A run of the variants on 6 cases of `dataset` (no token fidelity), through `executor`."""
    options = RunOptions(limit=6, out=out, token_fidelity=False, progress=False)
    return run_evaluation(load_dataset(dataset), variants, options=options, executor=executor)


def comparable_records(run_dir: Path) -> list[dict[str, Any]]:
    """The run's records without their timings, in variant and case order."""
    lines = [r.model_dump(exclude=_TIMING) for r in read_records(run_dir)]
    return sorted(lines, key=lambda r: (r["variant"], r["case_id"]))
