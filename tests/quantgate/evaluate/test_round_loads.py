"""The machine's load per variant and round, read with an injected reader (never the real machine's),
kept in summary.json and flagged in the summary table and decision.md when the machine was busy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.machine_load import CpuReading
from quantgate.analysis._report import write_report
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate.scheduler import _rounds as rounds
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.render._summary_table import render_summary
from quantgate.rundir._round_loads import variant_load
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, SCHEMA, QueuedChatModel


class _FakeCpu:
    """Readings in pairs (before, after each variant's part of a round): over part i, 10 s of wall
    time on 2 cores, and other processes taking `others[i]` of the CPU; the run's own time counts 4 s."""

    def __init__(self, others: list[float]) -> None:
        self.others = others
        self.calls = 0

    def __call__(self) -> CpuReading:
        part, after = divmod(self.calls, 2)
        self.calls += 1
        share = self.others[part] if part < len(self.others) else 0.0
        busy = 1000.0 * part + (4.0 + share * 20.0 if after else 0.0)
        own = 500.0 * part + (4.0 if after else 0.0)
        return CpuReading(at_s=100.0 * part + 10.0 * after, system_busy_s=busy, steal_s=0.0, own_s=own,
                          load_1min=2.5 if share else 0.5, cores=2)  # fmt: skip


def _run(tmp_path: Path, reader: _FakeCpu, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(rounds, "read_cpu", reader)
    lines = [Case(id=f"c{i}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(8)]
    write_dataset(
        tmp_path / "d", schema=SCHEMA, cases=lines, examples=[Case(id="e", text="e", expected=GOOD)]
    )
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(name, QueuedChatModel(outputs=[json.dumps(GOOD)]))
            for name in ("ref", "cand")
        ],
    )
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False, round_size=4)
    return run_evaluation(load_dataset(tmp_path / "d"), variants, options=options)


def test_each_variants_part_of_each_round_is_read_and_a_busy_one_is_flagged(tmp_path, monkeypatch):
    # parts in order: round 1 ref, cand; round 2 ref, cand: other processes took 30% in round 2's cand
    run_dir = _run(tmp_path, _FakeCpu([0.0, 0.05, 0.0, 0.3]), monkeypatch)
    summary = load_run(run_dir).summary
    parts = summary.machine_load
    assert parts is not None
    assert [(p.round, p.variant, p.cases, p.busy) for p in parts] == [
        (1, "ref", 4, False),
        (1, "cand", 4, False),
        (2, "ref", 4, False),
        (2, "cand", 4, True),
    ]
    assert [p.others_cpu_share for p in parts] == pytest.approx([0.0, 0.05, 0.0, 0.3])
    assert parts[3].wall_s == 10.0
    cand = variant_load(parts, "cand")
    assert cand is not None
    assert (cand.parts, cand.busy_parts, cand.busy_cases, cand.load_1min_max) == (2, 1, 4, 2.5)
    table = render_summary(summary)
    assert (
        "~ cand: latency and throughput partly taken while the machine was busy: other processes took "
        "up to 30.0% of the CPU (1-minute load up to 2.5) in 1 of its 2 round(s), 4 case(s)" in table
    )
    assert "~ ref" not in table
    row = next(line for line in table.splitlines() if line.startswith("cand "))
    assert "~" in row  # its tokens/s marked
    decide(run_dir, Gates())
    page = (run_dir / "decision.md").read_text()
    assert "## Measurement conditions" in page
    assert "| cand | 1 of 2 | 30.0% | 0.0% | 2.5 |" in page
    assert "| ref | 0 of 2 | 0.0% | 0.0% | 0.5 |" in page
    report = write_report(run_dir).read_text()
    assert "Measurement conditions" in report
    assert "~ cand: latency and throughput partly taken while the machine was busy" in report


def test_an_idle_run_flags_nothing(tmp_path, monkeypatch):
    run_dir = _run(tmp_path, _FakeCpu([0.0, 0.02, 0.0, 0.1]), monkeypatch)  # 10% is not above 10%
    summary = load_run(run_dir).summary
    assert summary.machine_load is not None
    assert not any(p.busy for p in summary.machine_load)
    assert "busy" not in render_summary(summary)
