"""A run never scores a calibration case: left out on the same dataset, refused elsewhere (issue 48)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.decide import decide
from quantgate.evaluate._calibration_holdout import without_calibration_cases
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import ImatrixCalibration, Variant, VariantSet
from quantgate.ladder._calibration_record import CalibrationCase, CalibrationRecord, text_sha256
from quantgate.ladder._llama_tool_calls import CalibrationError
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

CALIBRATION_IDS = ("c01", "c04")


def _dataset(root: Path, ids: list[str]) -> Dataset:
    cases = [Case(id=i, text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in ids]
    write_dataset(root, schema=SCHEMA, cases=cases, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _variants(tmp_path: Path, calibrated_on: Dataset) -> VariantSet:
    """A reference and a candidate calibrated on `CALIBRATION_IDS` of `calibrated_on`."""
    record = CalibrationRecord(
        dataset=calibrated_on.name,
        dataset_path=str(calibrated_on.path),
        dataset_sha256=calibrated_on.sha256,
        seed=0,
        cases=[CalibrationCase(id=i, text_sha256=text_sha256(f"case {i}")) for i in CALIBRATION_IDS],
        tokens=2048,
        chunk_tokens=512,
        chunks=4,
        text_sha256="0" * 64,
        model_sha256="1" * 64,
        imatrix_file="imatrix.gguf",
        imatrix_sha256="2" * 64,
        tool_version="version: 1 (x)",
        bindings_version="0.3.36",
    )
    file = tmp_path / "calibration.json"
    file.write_text(record.model_dump_json())
    imatrix = ImatrixCalibration(
        file=str(file), dataset=record.dataset, dataset_sha256=record.dataset_sha256, cases=2, tokens=2048,
        chunks=4, imatrix_sha256=record.imatrix_sha256, tool_version=record.tool_version,
    )  # fmt: skip
    answer = json.dumps(GOOD)
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", QueuedChatModel(outputs=[answer]), quantization="F16"),
            Variant.from_chat_model(
                "Q2_K+imat", QueuedChatModel(outputs=[answer]), quantization="Q2_K", imatrix=imatrix
            ),
        ],
    )


def test_a_run_on_the_calibration_dataset_leaves_the_calibration_cases_out(tmp_path, capsys):
    dataset = _dataset(tmp_path / "restaurants", [f"c{i:02d}" for i in range(6)])
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    run_dir = run_evaluation(dataset, _variants(tmp_path, dataset), options=options)
    scored = [c.id for c in load_dataset(run_dir / "dataset").cases]
    assert scored == ["c00", "c02", "c03", "c05"]
    summary = load_run(run_dir).summary
    assert summary.dataset.cases == 4
    assert summary.dataset.calibration_cases_left_out == ["c01", "c04"]
    decide(run_dir)
    assert "4 cases (sha256 " in (run_dir / "decision.md").read_text()
    assert "; 2 calibration cases left out of scoring). " in (run_dir / "decision.md").read_text()
    assert "2 calibration case(s) of the calibrated variants are left out of scoring: c01, c04" in (
        capsys.readouterr().err
    )


def test_a_run_on_the_calibration_cases_only_is_refused_naming_them(tmp_path):
    dataset = _dataset(tmp_path / "restaurants", [f"c{i:02d}" for i in range(6)])
    only = _dataset(tmp_path / "only", list(CALIBRATION_IDS))
    with pytest.raises(
        CalibrationError, match=r"case\(s\) c01, c04 are calibration cases of variant Q2_K\+imat"
    ):
        run_evaluation(only, _variants(tmp_path, dataset), options=RunOptions(out=tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()


def test_every_case_left_out_of_the_calibration_dataset_is_refused(tmp_path):
    dataset = _dataset(tmp_path / "restaurants", [f"c{i:02d}" for i in range(6)])
    same_name = _dataset(tmp_path / "elsewhere" / "restaurants", list(CALIBRATION_IDS))
    with pytest.raises(CalibrationError, match=r"every case to score is a calibration case \(c01, c04\)"):
        without_calibration_cases(same_name, _variants(tmp_path, dataset).variants)


def test_another_dataset_sharing_no_case_text_is_run_whole(tmp_path):
    dataset = _dataset(tmp_path / "restaurants", [f"c{i:02d}" for i in range(6)])
    other = _dataset(tmp_path / "other", ["c01", "x"])
    other = Dataset(
        **{**other.__dict__, "cases": tuple(c.model_copy(update={"text": "new"}) for c in other.cases)}
    )
    held_out = without_calibration_cases(other, _variants(tmp_path, dataset).variants)
    assert [c.id for c in held_out.dataset.cases] == ["c01", "x"]
    assert held_out.note is None


def test_a_missing_calibration_record_is_named(tmp_path):
    dataset = _dataset(tmp_path / "restaurants", ["c00", "c01"])
    variants = _variants(tmp_path, dataset).variants
    (tmp_path / "calibration.json").unlink()
    with pytest.raises(CalibrationError, match=r"calibration.json: cannot read the calibration record"):
        without_calibration_cases(dataset, variants)
