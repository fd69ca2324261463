"""The memory model's prediction beside each variant's measured peak: in summary.json and decision.md."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evaluators.memory_model import PROCESS_BASELINE_MIB, ModelShape
from quantgate.backends import OpenedVariant, registered_backend
from quantgate.capacity._shape_record import MemoryModelEntry, memory_model_check
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

TINY = ModelShape(
    architecture="tiny", n_layer=2, n_head=1, n_head_kv=(1, 1), key_length=4, value_length=4, n_embd=4,
    n_ff=8, n_vocab=10, context_length=1024,
)  # fmt: skip
"""tests/quantgate/capacity/test_capacity_gates.py works it out by hand: weights 1,000 bytes, context 100
and 5 sequences, f16 cache: 182,920 bytes above the process baseline; a q8_0 cache holds fewer."""
ENTRY = MemoryModelEntry(shape=TINY, weights_bytes=1_000)
PREDICTED_MB = PROCESS_BASELINE_MIB + 182_920 / 2**20
RUNTIME = {"n_ctx": 500, "slots": 5, "kv_cache": {"k": "f16", "v": "f16"}}


def test_the_prediction_at_the_runs_context_and_slots_beside_the_peak():
    check = memory_model_check(ENTRY, RUNTIME, 200.0)
    assert check is not None
    assert (check.context, check.sequences) == (100, 5)
    assert check.predicted_mb == pytest.approx(PREDICTED_MB, abs=0.01)
    assert check.measured_mb == 200.0
    assert check.error == pytest.approx((PREDICTED_MB - 200.0) / 200.0)
    quantized = memory_model_check(ENTRY, {**RUNTIME, "kv_cache": {"k": "q8_0", "v": "q8_0"}}, 200.0)
    assert quantized is not None
    assert quantized.predicted_mb < check.predicted_mb


def test_nothing_to_compare_without_a_record_a_context_or_a_peak():
    assert memory_model_check(None, RUNTIME, 200.0) is None  # a server variant: no memory-model record
    assert memory_model_check(ENTRY, {"name": "server"}, 200.0) is None
    assert memory_model_check(ENTRY, RUNTIME, None) is None


@contextmanager
def _sized(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]), runtime=dict(RUNTIME))


def test_a_run_puts_the_prediction_beside_the_measured_peak(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(
        "quantgate.evaluate._evaluation_run.memory_model_entry", lambda v: ENTRY if v.name == "cand" else None
    )
    lines = [Case(id=f"c{i}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(3)]
    write_dataset(
        tmp_path / "d", schema=SCHEMA, cases=lines, examples=[Case(id="e", text="e", expected=GOOD)]
    )
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", QueuedChatModel(outputs=[json.dumps(GOOD)])),
            Variant(name="cand", backend="sized", model="tiny.gguf"),
        ],
    )
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    with registered_backend("sized", _sized):
        run_dir = run_evaluation(load_dataset(tmp_path / "d"), variants, options=options)
    summary = load_run(run_dir).summary
    ref, cand = summary.entry("ref"), summary.entry("cand")
    assert ref is not None
    assert ref.memory_model_check is None  # no memory-model record
    assert cand is not None
    assert cand.memory_mb is not None
    check = cand.memory_model_check
    assert check is not None
    assert check.predicted_mb == pytest.approx(PREDICTED_MB, abs=0.01)
    assert check.measured_mb == cand.memory_mb
    decide(run_dir, Gates())
    page = (run_dir / "decision.md").read_text()
    conditions = page.split("## Measurement conditions")[1]
    row = next(line for line in conditions.splitlines() if line.startswith("| cand |"))
    assert f"| {PREDICTED_MB:.0f} | {cand.memory_mb:.0f} | {check.error:+.1%} |" in row
