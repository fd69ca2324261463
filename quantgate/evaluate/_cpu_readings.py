"""The CPU counters of this machine and of the run's own process tree, read with psutil.

`read_cpu` gives one `evaluators.machine_load.CpuReading`; two of them, before and after a
variant's part of a round, give the machine's load over it (`evaluators.machine_load.machine_load`).
The run's own CPU time is that of this process and of every live descendant (the variants' worker
processes), each with the CPU time of the children it has reaped: a worker that ended during the
part is still counted, in its parent's reaped-children time.
"""

from __future__ import annotations

import os
import time

import psutil

from evaluators.machine_load import CpuReading

__all__ = ["read_cpu"]

_BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
"""The system-wide CPU times of work done (guest time is inside `user` on Linux; idle, iowait and
steal are not work of this machine's processes)."""


def _tree_cpu_s(process: psutil.Process) -> float:
    """CPU time of `process` and its live descendants, each with its reaped children's."""
    total = 0.0
    for member in [process, *process.children(recursive=True)]:
        try:
            times = member.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # ended between the listing and the reading: its parent counts it once reaped
        total += times.user + times.system + times.children_user + times.children_system
    return total


def read_cpu() -> CpuReading:
    """The counters now (load average and steal None where the system does not report them)."""
    system = psutil.cpu_times()
    try:
        load: float | None = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    steal = getattr(system, "steal", None)
    return CpuReading(
        at_s=time.perf_counter(),
        system_busy_s=sum(getattr(system, name, 0.0) for name in _BUSY_FIELDS),
        steal_s=float(steal) if steal is not None else None,
        own_s=_tree_cpu_s(psutil.Process()),
        load_1min=load,
        cores=psutil.cpu_count() or 1,
    )
