"""`RayExecutor` with the real embedded ladder: greedy decoding gives the same outputs in a Ray
task as in a local worker, so the records and the decision are the same; token fidelity, measured
in a task of its own, is the local worker's. One case at a time:
with several sequences per batch, which ones share a batch depends on timing and changes the
quantized variants' outputs from run to run, on any executor (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from quantgate.cluster import RayExecutor
from quantgate.decide._recommendation import decide
from quantgate.evaluate import RunOptions, run_evaluation
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.rundir._files import FIDELITY_FILE
from quantgate.rundir._store import load_run, read_records

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _run(variants: VariantSet, out: Path, executor: VariantExecutor) -> Path:
    options = RunOptions(limit=2, out=out, token_fidelity_cases=1, progress=False, concurrency=1)
    return run_evaluation(load_dataset("restaurants"), variants, options=options, executor=executor)


def test_a_ray_run_of_the_ladder_records_the_same_outputs_and_decision(ladder, ray_cluster, tmp_path):
    variants = VariantSet(
        reference="F16", variants=[v for v in ladder.variants if v.name in ("F16", "Q4_K_M")]
    )
    local = _run(variants, tmp_path / "local", LocalExecutor())
    with RayExecutor.connect(progress=False) as executor:
        distributed = _run(variants, tmp_path / "ray", executor)

    def outputs(run_dir: Path) -> list[tuple[str, str, str | None, dict[str, Any] | None, float | None]]:
        return sorted(
            (r.variant, r.case_id, r.raw, r.record, r.field_accuracy) for r in read_records(run_dir)
        )

    assert len(outputs(distributed)) == 4
    assert outputs(distributed) == outputs(local)
    assert decide(distributed).outcome == decide(local).outcome
    assert decide(distributed).recommended == decide(local).recommended
    run = load_run(distributed)
    for entry in run.summary.variants:  # measured in the task's own process, as in a local worker
        assert entry.status == "ok"
        assert entry.model_memory_mb is not None
        assert entry.model_memory_mb > 100
        assert entry.tokens_per_s is not None
        assert entry.tokens_per_s > 0
    for line in run.variants.variants:
        assert line.placement is not None
        assert line.placement.executor == "ray"
        assert line.placement.resources["CPU"] == 2.0  # an embedded variant takes the whole node
        assert line.runtime is not None
        assert line.runtime["name"].startswith("llama.cpp")
    # token fidelity: measured in a task of its own, its records sent back to the driver
    q4, local_q4 = run.summary.entry("Q4_K_M"), load_run(local).summary.entry("Q4_K_M")
    assert q4 is not None
    assert local_q4 is not None
    assert q4.token_fidelity is not None
    assert local_q4.token_fidelity is not None
    assert q4.token_fidelity.positions == local_q4.token_fidelity.positions > 0
    assert q4.token_fidelity.kld_mean == pytest.approx(local_q4.token_fidelity.kld_mean, rel=1e-3)
    assert q4.token_fidelity.top1_agreement == local_q4.token_fidelity.top1_agreement
    lines = (distributed / FIDELITY_FILE).read_text().splitlines()
    assert len(lines) == len((local / FIDELITY_FILE).read_text().splitlines()) == 1
