"""The machine's load between two CPU readings: other processes' share, steal, busy."""

import pytest

from evaluators.machine_load import CpuReading, machine_load


def _reading(at_s: float, busy_s: float, own_s: float, *, steal_s: float | None = 0.0) -> CpuReading:
    return CpuReading(at_s=at_s, system_busy_s=busy_s, steal_s=steal_s, own_s=own_s, load_1min=1.5, cores=2)


def test_the_runs_own_cpu_is_not_counted_against_it():
    # 10 s on 2 cores = 20 CPU-seconds; the system was busy 19 s, 18 of them the run's own
    load = machine_load(_reading(0.0, 100.0, 5.0), _reading(10.0, 119.0, 23.0))
    assert load.others_cpu_share == pytest.approx(1 / 20)
    assert load.busy is False
    assert (load.wall_s, load.load_1min, load.steal_share) == (10.0, 1.5, 0.0)


def test_other_processes_above_ten_percent_make_it_busy():
    load = machine_load(_reading(0.0, 100.0, 5.0), _reading(10.0, 121.0, 23.0))  # 3 of 20 CPU-seconds
    assert load.others_cpu_share == pytest.approx(0.15)
    assert load.busy is True


def test_steal_above_ten_percent_makes_it_busy_and_a_missing_steal_is_none():
    stolen = machine_load(_reading(0.0, 0.0, 0.0, steal_s=1.0), _reading(10.0, 2.0, 2.0, steal_s=4.0))
    assert stolen.steal_share == pytest.approx(0.15)
    assert (stolen.others_cpu_share, stolen.busy) == (0.0, True)
    unknown = machine_load(_reading(0.0, 0.0, 0.0, steal_s=None), _reading(10.0, 2.0, 2.0, steal_s=None))
    assert (unknown.steal_share, unknown.busy) == (None, False)


def test_a_server_variant_is_not_judged_and_no_wall_time_gives_no_share():
    load = machine_load(_reading(0.0, 0.0, 0.0), _reading(10.0, 15.0, 0.0), judged=False)
    assert (load.others_cpu_share, load.busy) == (0.75, None)
    empty = machine_load(_reading(3.0, 0.0, 0.0), _reading(3.0, 1.0, 0.0))
    assert (empty.others_cpu_share, empty.steal_share, empty.busy) == (None, None, None)
