"""The noise floor's line beside the candidates' figures (decision.md and the report share it)."""

from __future__ import annotations

from evaluators.noise_floor import NoiseFloor
from quantgate.render._noise_floor_line import noise_floor_text
from quantgate.rundir._summary import DatasetInfo, NoiseFloorEntry, RunSummary


def _summary(**more: object) -> RunSummary:
    dataset = DatasetInfo(name="d", path="d", sha256="0", cases=4)
    return RunSummary(run_id="r", quantgate_version=None, status="complete", dataset=dataset, **more)  # type: ignore[arg-type]


def test_the_line_gives_identical_agreement_changed_fields_and_kld():
    figures = NoiseFloor(
        cases=4, identical=3, identical_share=0.75, agreement=0.9375, agreement_cases=4,
        fields_changed_share=0.0625, kld_positions=240, kld_mean=2e-6, kld_max=4e-5,
    )  # fmt: skip
    entry = NoiseFloorEntry.extending(
        figures, method="m", records="noise_floor.jsonl", first_concurrency=4, first_from=["run-1"]
    )
    text = noise_floor_text(_summary(noise_floor=entry))
    assert text is not None
    assert "on 4 cases (first 4 in flight, then 1): identical 3/4, agreement 93.8%" in text
    assert "fields changed 6.2% per case, KLD mean 2e-06 nats (max 4e-05) over 240 positions" in text
    assert "reference cache (run run-1)" in text


def test_a_missing_noise_floor_says_why_and_an_older_run_says_nothing():
    assert noise_floor_text(_summary(noise_floor_missing="not measured: x")) == "noise floor: not measured: x"
    assert noise_floor_text(_summary()) is None
