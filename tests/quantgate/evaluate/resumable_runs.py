"""An evaluation to interrupt and resume: six cases, a reference that answers right and a quantized
variant that gets `currency` wrong on cases 1 and 4, either stopped at a chosen case as by Ctrl-C
(shared by the resume and run-start tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.evaluate._evaluation_run import RunOptions, resume_evaluation, run_evaluation
from quantgate.evaluate._resume import ResumeError
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import RECORDS_FILE, SUMMARY_FILE
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

WRONG = json.dumps({**GOOD, "currency": "USD"})
"""The quantized variant's answer to some cases: one field wrong."""


def resume_dataset(root: Path, cases: int = 6) -> Dataset:
    lines = [
        Case(
            id=f"c{i}", text=f"case <{i}>", expected=GOOD, tags=("lang:es" if i % 2 else "lang:en", "numbers")
        )
        for i in range(cases)
    ]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def resume_variants(*, stop_ref: str | None = None, stop_quant: str | None = None) -> VariantSet:
    """The reference answers right; the quantized variant gets `currency` wrong on cases 1 and 4.

    `stop_*`: a case id at which that variant is interrupted (as by Ctrl-C).
    """
    quant_answers: dict[str, object] = {"case <1>": WRONG, "case <4>": WRONG}
    ref_answers: dict[str, object] = {}
    if stop_quant:
        quant_answers[f"case <{stop_quant[1:]}>"] = KeyboardInterrupt()
    if stop_ref:
        ref_answers[f"case <{stop_ref[1:]}>"] = KeyboardInterrupt()
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(
                "ref", QueuedChatModel(outputs=[json.dumps(GOOD)], by_text=ref_answers), quantization="F16"
            ),
            Variant.from_chat_model(
                "quant", QueuedChatModel(outputs=[json.dumps(GOOD)], by_text=quant_answers), quantization="Q4"
            ),
        ],
    )


def resume_options(tmp_path: Path, **changes: object) -> RunOptions:
    return RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False, **changes)  # type: ignore[arg-type]


def interrupted_run(dataset: Dataset, tmp_path: Path, **stops: str) -> Path:
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, resume_variants(**stops), options=resume_options(tmp_path))
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def assert_refused(run_dir: Path, match: str, **given: object) -> None:
    summary = (run_dir / SUMMARY_FILE).read_bytes()
    records = (run_dir / RECORDS_FILE).read_bytes()
    given.setdefault("variant_set", resume_variants())
    with pytest.raises(ResumeError, match=match):
        resume_evaluation(run_dir, progress=False, **given)  # type: ignore[arg-type]
    assert (run_dir / SUMMARY_FILE).read_bytes() == summary
    assert (run_dir / RECORDS_FILE).read_bytes() == records
