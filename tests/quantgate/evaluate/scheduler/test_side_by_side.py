"""A round's candidates grouped by machine and run side by side, and the warm pool's count per
machine (`quantgate.evaluate.scheduler._side_by_side`, `WarmCapacity`), with stand-in tracks and
workers: no model, no process."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from evaluators.memory import MemorySummary
from quantgate.evaluate.scheduler._pool import WarmCapacity
from quantgate.evaluate.scheduler._side_by_side import machine_groups, side_by_side
from quantgate.evaluate.scheduler._tracks import Track, WarmPool
from quantgate.evaluate.scheduler._variant import VariantJob
from quantgate.evaluate.scheduler._warm import Warmed, WorkerEnd
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import planned_metadata
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import Placement


def _track(name: str, node: str | None = None) -> Track:
    job = cast(VariantJob, SimpleNamespace(variant=Variant(name=name, backend="llamacpp", model="m.gguf")))
    return Track(job=job, is_reference=False, placement=Placement(executor="ray", node_id=node))


def test_candidates_are_grouped_by_the_node_their_worker_sits_on():
    a1, b1, a2, here = _track("a1", "A"), _track("b1", "B"), _track("a2", "A"), _track("here")
    assert machine_groups([a1, b1, a2]) == [[a1, a2], [b1]]
    assert machine_groups([here, _track("also-here")]) == [[here, _track("also-here")]]  # a local run
    assert machine_groups([]) == []


def _timed_parts(seconds: float) -> tuple[Any, dict[str, tuple[float, float, float | None]]]:
    """A part that sleeps, noting when it ran and the seconds of budget it was given."""
    spans: dict[str, tuple[float, float, float | None]] = {}

    def part(track: Track, left: float | None) -> float:
        started = time.perf_counter()
        time.sleep(seconds)
        spans[track.name] = (started, time.perf_counter(), left)
        return seconds

    return part, spans


def test_machines_run_at_once_and_the_variants_of_one_machine_in_turn():
    part, spans = _timed_parts(0.2)
    a1, a2, b1 = _track("a1", "A"), _track("a2", "A"), _track("b1", "B")
    took = side_by_side(machine_groups([a1, a2, b1]), part, left_s=10.0)
    assert spans["b1"][0] < spans["a1"][1]  # A and B at once
    assert spans["a1"][0] < spans["b1"][1]
    assert spans["a2"][0] >= spans["a1"][1]  # A's two in turn
    assert 0.4 <= took < 0.6  # the wall time, A's longest: not the 0.6 s of the three parts summed
    # each machine spends the budget on its own: a2 gets what a1 left, b1 all of it
    assert [spans[name][2] for name in ("a1", "a2", "b1")] == [10.0, pytest.approx(9.8), 10.0]


def test_one_machine_runs_in_turn_in_this_thread():
    threads: list[str] = []

    def part(track: Track, left: float | None) -> float:
        threads.append(threading.current_thread().name)
        return 1.5

    assert side_by_side([[_track("x"), _track("y")]], part, left_s=None) == 3.0  # the parts' own seconds
    assert threads == [threading.current_thread().name] * 2


def test_a_part_that_raises_is_raised_to_the_round():
    def part(track: Track, left: float | None) -> float:
        if track.name == "b":
            raise RuntimeError("b broke")
        return 0.0

    with pytest.raises(RuntimeError, match="b broke"):
        side_by_side([[_track("a", "A")], [_track("b", "B")]], part, left_s=None)


class _Worker:
    """A worker that loads nothing, noting its variant's loads and releases."""

    placement = Placement(executor="local")

    def __init__(self, job: VariantJob, events: list[str]) -> None:
        self.job, self.events = job, events

    def start(self) -> Warmed:
        self.events.append(f"load {self.job.variant.name}")
        return Warmed(load_s=0.0, cold_first_token_s=None, metadata=planned_metadata(self.job.variant),
                      quantization=None, concurrency=1)  # fmt: skip

    def end(self) -> WorkerEnd:
        self.events.append(f"free {self.job.variant.name}")
        return WorkerEnd(memory=MemorySummary())


def test_the_pool_frees_a_variant_of_the_same_machine_to_load_another(tmp_path: Path):
    events: list[str] = []
    capacity = WarmCapacity(
        machines={"A": 1, "B": 2}, machine_of={"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
    )
    with RunStore(tmp_path) as store:
        pool = WarmPool(store, capacity, on_load=lambda track: None,
                        make=lambda job, store: cast(Any, _Worker(job, events)))  # fmt: skip
        a1, a2, b1, b2 = (_track(name) for name in ("a1", "a2", "b1", "b2"))
        for track in (b1, a1, b2, a2):
            pool.worker(track)
    # A holds one: a1 is freed for a2; B holds both, and a load on A frees nothing of B's
    assert events == ["load b1", "load a1", "load b2", "free a1", "load a2"]
    assert [pool.holds(t) for t in (a1, a2, b1, b2)] == [False, True, True, True]
    assert capacity.held(["a1", "a2", "b1", "b2"]) == 3
    assert WarmCapacity.here(2).held(["x", "y", "z"]) == 2
