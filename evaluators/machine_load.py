"""How busy the machine was while a variant's cases ran: other processes' share of the CPU, steal.

A latency or throughput figure taken while other work ran beside the run is slower than the
variant is (issue 45: Q4_K_M at 9.1 tokens/s against F16's 15.7 while a package install ran
beside it). Two readings of the CPU counters, one before a variant's part of a round and one
after, give over that wall time:

- `others_cpu_share`: CPU time taken by processes *other than* the run's own process tree (the
  system's busy time less the run's processes' CPU time) over wall time x cores, the most telling
  figure: the run's own work is not counted against it;
- `steal_share`: CPU time the hypervisor gave to other guests, over wall time x cores;
- `load_1min`: the 1-minute load average at the end (the run's own processes included: shown,
  never judged).

A part is `busy` when other processes took more than `BUSY_OTHERS_SHARE` of the CPU, or steal
more than `BUSY_STEAL_SHARE`. A variant whose model runs in a server outside the run's processes
is not judged (`busy` None): the server's own work on its cases counts as other processes'.
Pure arithmetic on readings handed in (`quantgate.evaluate._cpu_readings` reads them).
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.results import EvaluatorResult

__all__ = ["BUSY_OTHERS_SHARE", "BUSY_STEAL_SHARE", "CpuReading", "MachineLoad", "machine_load"]

BUSY_OTHERS_SHARE = 0.10
"""Other processes taking more than this share of the machine's CPU make a part busy: on the
2-core machine, a fifth of one core used by something else the whole time."""
BUSY_STEAL_SHARE = 0.10
"""Steal above this share of the machine's CPU makes a part busy."""


@dataclass(frozen=True, kw_only=True)
class CpuReading:
    """The CPU counters at one moment (seconds since boot, or since the process started).

    Attributes:
        at_s: A monotonic clock (`time.perf_counter()`).
        system_busy_s: Every CPU's time not idle, not waiting on I/O and not stolen, summed.
        steal_s: Every CPU's stolen time, summed (None: the system does not report it).
        own_s: CPU time of the run's own process tree (its processes, live and ended).
        load_1min: The 1-minute load average (None: not available).
        cores: Logical CPUs.
    """

    at_s: float
    system_busy_s: float
    steal_s: float | None
    own_s: float
    load_1min: float | None
    cores: int


class MachineLoad(EvaluatorResult):
    """The machine's load over one stretch of wall time (module docstring).

    Attributes:
        wall_s: The stretch's wall time.
        others_cpu_share: Other processes' CPU time over wall time x cores (0 to 1).
        steal_share: Stolen CPU time over wall time x cores (None: not reported).
        load_1min: The 1-minute load average at its end.
        busy: Other processes or steal took more than their threshold (None: not judged, a
            variant whose model runs in a server, or no wall time).
    """

    wall_s: float
    others_cpu_share: float | None
    steal_share: float | None
    load_1min: float | None
    busy: bool | None


def machine_load(start: CpuReading, end: CpuReading, *, judged: bool = True) -> MachineLoad:
    """The load between two readings; shares None over no wall time.

    Args:
        start: The reading before.
        end: The reading after.
        judged: Judge `busy` (False: the work measured runs outside the run's processes).
    """
    wall = end.at_s - start.at_s
    capacity = wall * max(end.cores, 1)
    if capacity <= 0:
        return MachineLoad(wall_s=max(wall, 0.0), others_cpu_share=None, steal_share=None,
                           load_1min=end.load_1min, busy=None)  # fmt: skip
    others_s = (end.system_busy_s - start.system_busy_s) - (end.own_s - start.own_s)
    others = min(max(others_s / capacity, 0.0), 1.0)
    steal = None
    if start.steal_s is not None and end.steal_s is not None:
        steal = min(max((end.steal_s - start.steal_s) / capacity, 0.0), 1.0)
    busy = others > BUSY_OTHERS_SHARE or (steal is not None and steal > BUSY_STEAL_SHARE) if judged else None
    return MachineLoad(
        wall_s=wall, others_cpu_share=others, steal_share=steal, load_1min=end.load_1min, busy=busy
    )
