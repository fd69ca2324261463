"""Verification in a run: candidates whose backend declares it get the reference's answers (one per
model call, repairs included) for the cases after the latency sample; records and the summary say how
each answer was obtained; the latency figures come from the sample alone; `--no-verify` and a backend
without verification decode everything and say why."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evaluators.latency import latency_p95
from quantgate.backends import BackendCapabilities, OpenedVariant
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.render._summary_table import fidelity_section
from quantgate.rundir._files import DECISION_MD
from quantgate.rundir._store import load_run, read_decision, read_records
from tests.fakes import GOOD, SCHEMA, VerifyingChatModel

WRONG = json.dumps({**GOOD, "currency": "USD"})
BROKEN = "not json"
MODELS: dict[str, VerifyingChatModel] = {}


@contextmanager
def _open(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    by_text = {"case <3>": BROKEN}  # both variants answer case 3 with text that no repair fixes
    if variant.options.get("differs"):
        by_text["case <4>"] = WRONG  # the candidate differs on case 4
    model = VerifyingChatModel(outputs=[json.dumps(GOOD)], by_text=by_text)
    MODELS[variant.name] = model
    yield OpenedVariant(chat_model=model, runtime={"name": "verifying fake", "version": "0"})


def _dataset(root: Path, cases: int = 6) -> Dataset:
    lines = [Case(id=f"c{i}", text=f"case <{i}>", expected=GOOD, tags=("lang:en",)) for i in range(cases)]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _run(tmp_path: Path, backend: str = "verifying", **options: Any) -> Path:
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant(name="ref", backend=backend, model="ref"),
            Variant(name="cand", backend=backend, model="cand", options={"differs": 1}),
        ],
    )
    settings = RunOptions(
        out=tmp_path / "runs", progress=False, token_fidelity=False, round_size=3, concurrency=1, **options
    )
    return run_evaluation(_dataset(tmp_path / "d"), variants, options=settings)


@pytest.fixture(autouse=True)
def backends(register_backend: Any) -> None:
    register_backend("verifying", _open, capabilities=BackendCapabilities(verification=True))
    register_backend("plain", _open, capabilities=BackendCapabilities())
    MODELS.clear()


def _given(name: str, case: int) -> list[str | None]:
    return [answer for text, answer in MODELS[name].given if f"case <{case}>" in text]


def _drafting(name: str) -> set[int]:
    return {i for i in range(6) for text in MODELS[name].drafting if f"case <{i}>" in text}


def _keeps(attempts: list[dict[str, Any]]) -> bool:
    return any("top_logprobs" in a for a in attempts)


def _positions(attempts: list[dict[str, Any]]) -> int:
    return sum(len(a["fidelity"]["kld"]) for a in attempts if "fidelity" in a)


def test_candidates_verify_the_references_answers_after_the_latency_sample(tmp_path):
    run = _run(tmp_path, latency_cases=2)
    assert _given("cand", 0) == [None]  # the latency sample: decoded in full
    assert _given("cand", 1) == [None]
    assert _given("cand", 2) == [json.dumps(GOOD)]
    assert _given("cand", 3) == [BROKEN, BROKEN, BROKEN]  # each repair gets the reference's repair answer
    assert _given("cand", 4) == [json.dumps(GOOD)]
    assert all(answer is None for _, answer in MODELS["ref"].given)  # the reference decodes
    obtained = {r.case_id: r.obtained for r in read_records(run) if r.variant == "cand"}
    assert obtained == {
        "c0": "decoded", "c1": "decoded", "c2": "verified", "c3": "verified",
        "c4": "verified_then_decoded", "c5": "verified",
    }  # fmt: skip
    assert {r.obtained for r in read_records(run) if r.variant == "ref"} == {"decoded"}
    summary = load_run(run).summary
    ref, cand = summary.entry("ref"), summary.entry("cand")
    assert ref is not None
    assert cand is not None
    assert (cand.verified_cases, cand.verified_then_decoded_cases, cand.decoded_cases) == (3, 1, 2)
    assert cand.verification_missing is None
    assert (ref.cases_timed, cand.cases_timed) == (2, 2)  # latency: the same two cases for both
    assert cand.throughput_tokens_per_s is None  # verified cases read answers: no decoding throughput
    assert cand.agreement_with_reference is not None
    assert cand.agreement_with_reference < 1.0  # case 4, decoded from where it differed, disagrees
    records = {(r.variant, r.case_id): r for r in read_records(run)}
    kept = {c for (v, c), r in records.items() if v == "ref" and _keeps(r.attempt_timings)}
    assert kept == {"c2", "c3", "c4", "c5"}  # not on the latency sample, decoded the same way by all
    assert _drafting("ref") == {2, 3, 4, 5}  # the reference drafts where no latency figure is taken
    assert _drafting("cand") == set()  # a candidate drafts from the answer it is given (the backend's)
    fidelity = cand.verified_fidelity
    assert fidelity is not None
    own = {c: r for (v, c), r in records.items() if v == "cand"}
    positions = {c: _positions(r.attempt_timings) for c, r in own.items()}
    diverged = len(json.dumps(GOOD).split('"currency": "')[0]) + len('"currency": "')  # "EUR" vs "USD"
    assert positions == {"c0": 0, "c1": 0, "c2": len(json.dumps(GOOD)), "c3": 3 * len(BROKEN),
                         "c4": diverged + 1, "c5": len(json.dumps(GOOD))}  # fmt: skip
    assert (fidelity.cases, fidelity.positions, fidelity.unmeasured_cases) == (4, sum(positions.values()), 0)
    assert fidelity.kld_mean == pytest.approx(0.01)
    assert fidelity.case_kld_median == pytest.approx(0.01)
    assert fidelity.case_kld_low is None  # four cases cannot give a 95% sign-test interval
    assert fidelity.case_top1_mean == pytest.approx((3 + diverged / (diverged + 1)) / 4)
    assert fidelity.top1_agreement == pytest.approx(1 - 1 / fidelity.positions)
    table = "\n".join(fidelity_section(load_run(run).summary))
    assert f"cand verified  {fidelity.positions}  " in table  # beside no teacher-forced row: it is off here
    assert 'Rows marked "verified"' in table.replace("\n", " ")  # the note, wrapped
    assert load_run(run).summary.latency_sample == ["c0", "c1"]
    decide(run)
    sample = [r for r in read_records(run) if r.variant == "ref" and r.case_id in ("c0", "c1")]
    ref_totals = [r.total_s for r in sample if r.total_s is not None]
    assert len(ref_totals) == 2
    measured = read_decision(run).variants["ref"].measured
    assert measured is not None
    assert measured.latency_s_p95 == pytest.approx(latency_p95(ref_totals))  # the sample only
    decision = (run / DECISION_MD).read_text()
    assert "cand: 3 verified, 1 verified then decoded, 2 decoded" in decision
    assert "the first 2 cases were decoded in full by every variant" in decision
    assert (
        f"cand: {fidelity.positions} positions in 4 cases; KLD at least 0.0100 nats on average (per-case "
        "median 0.0100 (too few cases for an interval))"
    ) in decision


def test_no_verify_decodes_every_case_and_says_so(tmp_path):
    run = _run(tmp_path, verify=False, latency_cases=2)
    assert all(answer is None for _, answer in MODELS["cand"].given)
    assert _drafting("ref") == set()  # everything decoded token by token, as before
    cand = load_run(run).summary.entry("cand")
    assert cand is not None
    assert cand.verified_cases == 0
    assert cand.decoded_cases == 6
    assert cand.cases_timed == 2  # every case decoded, the latency figures from the sample alone
    assert load_run(run).summary.latency_sample == ["c0", "c1"]
    assert cand.verification_missing is not None
    assert "--no-verify" in cand.verification_missing
    assert {r.obtained for r in read_records(run) if r.variant == "cand"} == {"decoded"}


def test_a_backend_without_verification_decodes_and_says_why(tmp_path):
    run = _run(tmp_path, backend="plain", latency_cases=2)
    assert all(answer is None for _, answer in MODELS["cand"].given)
    cand = load_run(run).summary.entry("cand")
    assert cand is not None
    assert cand.verification_missing is not None
    assert "plain backend" in cand.verification_missing
    assert cand.cases_timed == 2  # still the sample's cases, as the reference's
