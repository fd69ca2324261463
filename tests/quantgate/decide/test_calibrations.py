"""Calibrated against plain, judged like any pair: the twins, the plain twin kept open beside its
calibrated one, and the comparison in decision.json, decision.md and the report (issue 48, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.analysis._report import write_report
from quantgate.decide import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._calibration_twins import CalibrationTwin, calibration_twins
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import (
    CalibrationSource,
    ImatrixCalibration,
    KVCache,
    Variant,
    VariantSet,
    VariantSpec,
)
from quantgate.ladder._calibration_record import CalibrationRecord
from quantgate.rundir._store import read_records
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

GATES = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None, max_flip_share=None)
WRONG = json.dumps({"vendor": "x", "total": 1.0, "issued": "1999-01-01", "currency": "JPY"})


def _imatrix(tmp_path: Path, source: CalibrationSource = "text") -> ImatrixCalibration:
    """A general text's matrix: its calibration.json holds no case, so the run leaves none out."""
    record = CalibrationRecord(
        source=source, dataset="general.txt", dataset_path="general.txt", dataset_sha256="3" * 64, seed=0,
        cases=[], answers="none", tokens=2048, chunk_tokens=512, chunks=4, text_sha256="0" * 64,
        model_sha256="1" * 64, imatrix_file="imatrix.gguf", imatrix_sha256="2" * 64,
        tool_version="version: 1 (x)", bindings_version="0.3.36",
    )  # fmt: skip
    file = tmp_path / f"calibration-{source}.json"
    file.write_text(record.model_dump_json())
    return ImatrixCalibration(
        file=str(file), source=source, dataset="general.txt", dataset_sha256="3" * 64, cases=0,
        tokens=2048, chunks=4, imatrix_sha256="2" * 64, tool_version="version: 1 (x)",
    )  # fmt: skip


def _spec(name: str, quantization: str | None, **more) -> VariantSpec:
    return VariantSpec(name=name, backend="llamacpp", quantization=quantization, **more)


def test_twins_are_the_same_type_backend_and_cache_with_and_without_a_matrix(tmp_path):
    imatrix = _imatrix(tmp_path)
    variants = [
        _spec("F16", "F16"),
        _spec("Q2_K", "Q2_K"),
        _spec("Q2_K-kv-q8_0", "Q2_K", kv_cache=KVCache(k="q8_0", v="q8_0")),
        _spec("Q2_K+imat-text", "Q2_K", imatrix=imatrix, calibration="importance matrix from general.txt"),
        _spec("IQ3_XXS+imat", "IQ3_XXS", imatrix=imatrix, calibration="importance matrix from restaurants"),
        _spec("Q4_K_M", "Q4_K_M"),
    ]
    assert calibration_twins(variants) == [
        CalibrationTwin(quantization="Q2_K", plain="Q2_K", calibrated="Q2_K+imat-text", source="text")
    ]  # IQ3_XXS+imat has no plain twin; the KV-cache variant is not Q2_K+imat-text's twin


def _dataset(root: Path, cases: int) -> Dataset:
    lines = [Case(id=f"c{i:02d}", text=f"case <{i}>", expected=GOOD, tags=("lang:en",)) for i in range(cases)]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _run(tmp_path: Path, *, calibrated: bool) -> Path:
    """ref and the calibrated variant always right, the plain Q2_K always wrong (it fails in the first
    round, the calibrated one passes after the second)."""
    right = json.dumps(GOOD)
    imatrix = _imatrix(tmp_path) if calibrated else None
    variants = [
        Variant.from_chat_model("ref", QueuedChatModel(outputs=[right]), quantization="F16"),
        Variant.from_chat_model("Q2_K", QueuedChatModel(outputs=[WRONG]), quantization="Q2_K"),
        Variant.from_chat_model(
            "Q2_K+imat-text",
            QueuedChatModel(outputs=[right]),
            quantization="Q2_K",
            imatrix=imatrix,
            calibration="importance matrix from the text file general.txt" if calibrated else "none",
        ),
    ]
    options = RunOptions(
        out=tmp_path / "runs",
        progress=False,
        token_fidelity=False,
        round_size=10,
        sequential=True,
        gates=GATES,
    )
    variant_set = VariantSet(reference="ref", variants=variants)
    return run_evaluation(_dataset(tmp_path / "d", 60), variant_set, options=options)


def _cases_of(run_dir: Path, variant: str) -> int:
    return sum(r.variant == variant for r in read_records(run_dir))


@pytest.mark.parametrize("calibrated", [True, False])
def test_a_plain_twin_stays_open_while_its_calibrated_twin_is_and_the_decision_compares_them(
    tmp_path, calibrated
):
    run_dir = _run(tmp_path, calibrated=calibrated)
    decision = decide(
        run_dir, Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None, max_flip_share=None)
    )
    assert decision.variants["Q2_K"].passes is False
    assert decision.variants["Q2_K+imat-text"].passes is True
    assert decision.record.dataset.calibration_cases_left_out == []  # a text's matrix has no case
    if not calibrated:  # no twin: Q2_K stops when it fails, after the first round
        assert _cases_of(run_dir, "Q2_K") == 10
        assert decision.calibrations == []
        return
    assert _cases_of(run_dir, "Q2_K") == _cases_of(run_dir, "Q2_K+imat-text") == 20
    [comparison] = decision.calibrations
    assert (comparison.plain, comparison.calibrated, comparison.source) == ("Q2_K", "Q2_K+imat-text", "text")
    accuracy = comparison.accuracy
    assert accuracy is not None
    assert accuracy.cases == 20
    assert (accuracy.reference, accuracy.variant, accuracy.delta) == (0.0, 1.0, 1.0)
    assert accuracy.interval is not None
    assert accuracy.interval.low > 0
    assert comparison.finding == "better"
    markdown = (run_dir / "decision.md").read_text()
    assert "## Calibrated against plain" in markdown
    sentence = "calibration on a general text moves Q2_K by +100.0 points"
    assert sentence in markdown
    assert "(calibrated better, 20 cases)" in markdown
    html = write_report(run_dir).read_text()
    assert "Calibrated against plain" in html
    assert sentence in html
