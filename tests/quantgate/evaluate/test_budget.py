"""The budget of a run in rounds holds at case granularity: no case starts once it is spent, inside
a round too, and every finished pair is kept for the sequence (issue 45)."""

from __future__ import annotations

import json
from pathlib import Path

from quantgate.evaluate._evaluation_run import RunOptions, resume_evaluation, run_evaluation
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import latest_records, load_run, read_records
from tests.fakes import GOOD, SCHEMA, QueuedChatModel, SleepyChatModel
from tests.quantgate.evaluate import slow_backend

GATES = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None)  # identical answers: settled at 19
CASE_S = 0.08  # SleepyChatModel(delay_s=0.02): 4 pieces a case


def _dataset(root: Path, cases: int) -> Dataset:
    lines = [Case(id=f"c{i:02d}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(cases)]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _options(tmp_path: Path, budget_s: float) -> RunOptions:
    return RunOptions(
        out=tmp_path / "runs",
        progress=False,
        token_fidelity=False,
        sequential=True,
        gates=GATES,
        round_size=10,
        concurrency=1,
        budget_s=budget_s,
    )


def _variants() -> VariantSet:
    """A fast reference, a slow candidate `slow`, then a fast candidate `late`."""
    fast, also_fast = QueuedChatModel(outputs=[json.dumps(GOOD)]), QueuedChatModel(outputs=[json.dumps(GOOD)])
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", fast, quantization="F16"),
            Variant.from_chat_model("slow", SleepyChatModel(delay_s=0.02), quantization="Q8_0"),
            Variant.from_chat_model("late", also_fast, quantization="Q4_K_M"),
        ],
    )


def test_a_budget_that_ends_inside_a_round_stops_within_one_case_and_keeps_the_pairs(tmp_path):
    dataset = _dataset(tmp_path / "d", 40)
    budget_s = 0.4  # about 5 of the slow candidate's cases; its first round alone would take 0.8 s
    run_dir = run_evaluation(dataset, _variants(), options=_options(tmp_path, budget_s))
    summary = load_run(run_dir).summary
    records = latest_records(read_records(run_dir))
    order = [c.id for c in load_dataset(run_dir / "dataset").cases]
    slow = summary.entry("slow")
    assert slow is not None
    assert slow.sequential is not None
    kept = len(records["slow"])
    assert 2 <= kept <= 6  # the round's 10 cases cut where the budget ended
    assert sorted(records["slow"], key=order.index) == order[:kept]  # every finished case kept, in order
    assert (slow.sequential.cases, slow.sequential.paired_cases) == (kept, kept)
    assert (slow.sequential.settled, slow.sequential.stopped) == (None, "budget")
    # the budget was spent inside the slow candidate's turn: the next variant starts no case
    late = summary.entry("late")
    assert late is not None
    assert late.sequential is not None
    assert (late.sequential.cases, late.sequential.stopped) == (0, "budget")
    assert "late" not in records
    assert len(records["ref"]) == 10
    ref = summary.entry("ref")
    assert ref is not None
    assert ref.sequential is not None
    assert ref.sequential.stopped == "budget"
    assert summary.evaluation_s is not None
    assert budget_s <= summary.evaluation_s < budget_s + CASE_S + 0.15  # within one case of the budget


def test_resume_goes_on_with_the_same_sequence_after_a_budget_cut_inside_a_round(tmp_path):
    dataset = _dataset(tmp_path / "d", 40)
    run_dir = run_evaluation(dataset, _variants(), options=_options(tmp_path, 0.4))
    before = len(latest_records(read_records(run_dir))["slow"])
    resume_evaluation(run_dir, variant_set=_variants(), budget_s=60.0, progress=False)
    summary = load_run(run_dir).summary
    records = latest_records(read_records(run_dir))
    order = [c.id for c in load_dataset(run_dir / "dataset").cases]
    for name in ("slow", "late"):
        entry = summary.entry(name)
        assert entry is not None
        assert entry.sequential is not None
        # identical answers settle the 20-point gate at 19 pairs: the end of the second round
        assert (entry.sequential.settled, entry.sequential.cases) == ("pass", 20)
        assert sorted(records[name], key=order.index) == order[:20]
        assert sum(1 for r in read_records(run_dir) if r.variant == name) == 20  # each case once
    slow = summary.entry("slow")
    assert slow is not None
    assert slow.resumed_cases == before  # the pairs the budget cut kept are read back, not run again
    parts = summary.machine_load  # the machine's load per part: the resume goes on counting rounds
    assert parts is not None
    assert [(p.round, p.variant) for p in parts][:2] == [(1, "ref"), (1, "slow")]
    assert [p.round for p in parts if p.variant == "slow"] == [1, 2, 3]


def test_a_worker_process_is_given_the_seconds_left_and_stops_there(tmp_path):
    dataset, _ = slow_backend.write_inputs(tmp_path, cases=30, delay_s=0.0)
    data = load_dataset(dataset)
    slow = slow_backend.slow_variant
    variants = VariantSet(reference="ref", variants=[slow("ref", delay_s=0.0), slow("cand", delay_s=0.1)])
    # 0.8 s: the reference's round takes up to 0.2 s here, and the candidate's first case in its
    # worker up to 0.26 s (measured: the later ones 0.1 s), so at least 2 of its cases fit
    run_dir = run_evaluation(data, variants, options=_options(tmp_path, 0.8))
    summary = load_run(run_dir).summary
    cand = summary.entry("cand")
    assert cand is not None
    assert cand.sequential is not None
    assert 2 <= cand.sequential.cases <= 8  # not the round's 10: its worker set its own deadline
    assert cand.sequential.stopped == "budget"
    assert summary.evaluation_s is not None
    assert summary.evaluation_s < 0.8 + 0.1 + 0.3


def test_a_reference_running_alone_expects_its_own_time_once(tmp_path):
    """Every candidate skipped: the reference runs alone, and the next round's expected time is its
    own seconds per case (counted once), so the rounds that fit in the budget run."""
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", SleepyChatModel(delay_s=0.15)),  # 0.6 s a case
            Variant(name="broken", backend="llamacpp", model=str(broken)),
        ],
    )
    options = RunOptions(
        out=tmp_path / "runs", progress=False, token_fidelity=False, round_size=1, concurrency=1, budget_s=1.5
    )
    summary = load_run(run_evaluation(_dataset(tmp_path / "d", 5), variants, options=options)).summary
    # the second round is expected to take 0.6 s: 1.2 s fit in 1.5; a third would not (1.8 s)
    assert summary.entry("ref").cases == 2  # type: ignore[union-attr]
