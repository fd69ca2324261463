"""Calibration twins: a calibrated variant and the plain variant of the same quantization type.

`quantgate ladder --calibrate` makes `Q2_K+imat` beside the plain `Q2_K` (and `--calibrate-text`
makes `Q2_K+imat-text`): the same type from the same F16 reference, with and without an importance
matrix. A run that has both judges one against the other on the same cases (the scheduler keeps the
plain twin open while a calibrated one is, `quantgate.evaluate.scheduler._rounds`; the decision
compares them, `quantgate.decide._calibrations`). Twins are on the same backend with the same
KV-cache type, so the importance matrix is the only difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from quantgate.inputs._variants import CalibrationSource, VariantSpec


@dataclass(frozen=True, kw_only=True)
class CalibrationTwin:
    """A calibrated variant and its plain twin."""

    quantization: str
    plain: str
    calibrated: str
    source: CalibrationSource


def _key(variant: VariantSpec) -> tuple[str, str, str]:
    cache = variant.kv_cache.label() if variant.kv_cache else ""
    return (variant.quantization or "", variant.backend, cache)


def calibration_twins(variants: Sequence[VariantSpec]) -> list[CalibrationTwin]:
    """Each calibrated variant with the plain variant of the same type, backend and KV cache (the
    first listed when there are several), in the order the calibrated variants are listed; a
    calibrated variant without a plain twin has none."""
    plain: dict[tuple[str, str, str], str] = {}
    for variant in variants:
        if variant.imatrix is None and variant.calibration == "none" and variant.quantization:
            plain.setdefault(_key(variant), variant.name)
    return [
        CalibrationTwin(
            quantization=variant.quantization or "",
            plain=plain[_key(variant)],
            calibrated=variant.name,
            source=variant.imatrix.source,
        )
        for variant in variants
        if variant.imatrix is not None and _key(variant) in plain
    ]
