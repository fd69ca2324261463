"""A run never scores a case its variants' importance matrices were computed from.

A calibrated variant (`Variant.imatrix`) names its calibration.json. On the same dataset (same
sha256, or same name) the run leaves those case ids out; a case of any other dataset whose text is
a calibration case's (by sha256) is refused, and so is a run whose every case is one: a calibration
case scored would flatter the calibrated variant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._variants import Variant
from quantgate.ladder._calibration_record import CalibrationRecord, read_calibration_record, text_sha256
from quantgate.ladder._llama_tool_calls import CalibrationError

_SHOWN = 5


@dataclass(frozen=True, kw_only=True)
class HeldOut:
    """The dataset a run scores, and what was left out (a note for the user; None when nothing)."""

    dataset: Dataset
    note: str | None = None


def _ids(cases: Sequence[Case]) -> str:
    shown = ", ".join(case.id for case in cases[:_SHOWN])
    return shown + (f" and {len(cases) - _SHOWN} more" if len(cases) > _SHOWN else "")


def _is_calibration_case(case: Case, record: CalibrationRecord, same_dataset: bool) -> bool:
    hashes = {c.text_sha256 for c in record.cases}
    return (same_dataset and case.id in record.case_ids()) or text_sha256(case.text) in hashes


def without_calibration_cases(dataset: Dataset, variants: Sequence[Variant]) -> HeldOut:
    """The dataset without the calibration cases of the variants' importance matrices.

    Raises:
        CalibrationError: A calibration.json that cannot be read; a case of another dataset that is
            a calibration case; no case left to score. The message names the cases and the variant.
    """
    left_out: list[Case] = []
    for variant in variants:
        if variant.imatrix is None:
            continue
        record = read_calibration_record(Path(variant.imatrix.file))
        same = record.dataset_sha256 == dataset.sha256 or record.dataset == dataset.name
        calibration = [c for c in dataset.cases if _is_calibration_case(c, record, same)]
        where = f"variant {variant.name}'s importance matrix ({variant.imatrix.file})"
        if calibration and not same:
            raise CalibrationError(
                f"{dataset.path}: case(s) {_ids(calibration)} are calibration cases of {where}, computed "
                f"from {record.dataset}: a run must not score them; leave them out of the dataset"
            )
        left_out += [c for c in calibration if c.id not in {o.id for o in left_out}]
    if not left_out:
        return HeldOut(dataset=dataset)
    ids = {c.id for c in left_out}
    kept = tuple(c for c in dataset.cases if c.id not in ids)
    if not kept:
        raise CalibrationError(
            f"{dataset.path}: every case to score is a calibration case ({_ids(left_out)}) of the "
            "calibrated variants' importance matrices: a run must not score them; run on other cases"
        )
    note = (
        f"{len(left_out)} calibration case(s) of the calibrated variants are left out of scoring: "
        f"{_ids(left_out)}"
    )
    left = tuple(c.id for c in dataset.cases if c.id in ids)
    return HeldOut(dataset=replace(dataset, cases=kept, left_out=left), note=note)
