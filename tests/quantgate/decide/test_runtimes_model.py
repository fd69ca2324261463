"""Runtimes compared on the real model: the ladder's Q4_K_M embedded and the same file behind
llama-cpp-python's real OpenAI-compatible server, in one run, decided; every figure of the pair is
recomputed here from the run's records."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import latest_records, read_records

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_the_embedded_q4_and_the_same_file_behind_a_server_are_compared(
    ladder: VariantSet, llama_server, tmp_path: Path
) -> None:
    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    assert q4.sha256
    served = Variant(
        name="Q4_K_M-server",
        backend="openai",
        model=llama_server.model,
        quantization="Q4_K_M",
        sha256=q4.sha256,
        options={"base_url": llama_server.url, "max_tokens": 160},
    )
    embedded = q4.model_copy(update={"options": {**q4.options, "max_tokens": 160}})
    variants = VariantSet(reference="Q4_K_M", variants=[embedded, served])
    options = RunOptions(limit=2, out=tmp_path, progress=False, token_fidelity=False, concurrency=1)
    run_dir = run_evaluation(load_dataset("restaurants"), variants, options=options)
    decision = decide(run_dir, Gates(max_runtime_accuracy_drop=0.05))

    [pair] = decision.runtimes
    assert (pair.base, pair.variant, pair.base_is) == ("Q4_K_M", "Q4_K_M-server", "embedded")
    assert (pair.base_backend, pair.variant_backend, pair.sha256) == ("llamacpp", "openai", q4.sha256)
    records = latest_records(read_records(run_dir))
    base, other = records["Q4_K_M"], records["Q4_K_M-server"]
    assert pair.cases == 2
    same = sum(b.valid and other[c].valid and b.record == other[c].record for c, b in base.items())
    assert pair.identical == same
    # the base is the reference: the pair's agreement is the run's agreement with the reference
    server_agreement = decision.variants["Q4_K_M-server"].agreement
    assert pair.agreement is not None
    assert server_agreement is not None
    assert pair.agreement.overall == pytest.approx(server_agreement.overall)
    assert pair.accuracy is not None
    assert pair.accuracy.delta == pytest.approx(
        sum(r.field_accuracy or 0.0 for r in other.values()) / 2
        - sum(r.field_accuracy or 0.0 for r in base.values()) / 2
    )
    assert pair.token_fidelity is None  # switched off here, and another backend in any case
    gate = next(g for g in decision.variants["Q4_K_M-server"].gates if g.gate == "max_runtime_accuracy_drop")
    assert gate.status == "inconclusive"  # 2 cases, fewer than 30
    assert "## Runtime comparison" in (run_dir / "decision.md").read_text(encoding="utf-8")
