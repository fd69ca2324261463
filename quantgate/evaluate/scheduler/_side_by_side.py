"""A round's candidates side by side: one at a time on each machine, the machines at the same time.

A round's open candidates are grouped by the machine their warm worker sits on (`machine_groups`:
its placement's `node_id`, a Ray actor's node; None, this machine, for a local worker). The
variants of a group run one after another, so that no two timed variants ever share a machine;
the groups run at the same time, each in a thread of the driver (`side_by_side`). With one group
(every local run, and a cluster run whose candidates share a node) nothing runs in a thread: the
variants take turns, as they always did. What a candidate's part records does not depend on the
order in which the parts end: a candidate's sequence is updated from its outcomes in run order
once the round is over (`quantgate.evaluate.scheduler._stopping_rule.paired_outcomes`).

The load of the machine a part ran on (`part_load`) is read there: on its node by a Ray actor,
which sends its CPU counters back with the round (`RoundRan.node`), else on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from evaluators.machine_load import CpuReading, machine_load
from quantgate.backends import capabilities
from quantgate.evaluate.scheduler._tracks import Track
from quantgate.evaluate.scheduler._warm import RoundRan
from quantgate.rundir._round_loads import RoundLoadEntry

__all__ = ["Part", "machine_groups", "part_load", "side_by_side"]

Part = Callable[[Track, float | None], float]
"""One variant's part of a round, given the seconds of the budget left (None: no budget); it
returns the seconds it took (0 when nothing ran)."""


def machine_groups(tracks: Sequence[Track]) -> list[list[Track]]:
    """The tracks grouped by the machine their worker sits on, in their order (the first
    machine's first)."""
    groups: dict[str | None, list[Track]] = {}
    for track in tracks:
        groups.setdefault(track.placement.node_id, []).append(track)
    return list(groups.values())


def _in_turn(group: Sequence[Track], part: Part, left_s: float | None) -> float:
    """The group's parts one after another, each given what its elders left; their seconds."""
    used = 0.0
    for track in group:
        used += part(track, None if left_s is None else left_s - used)
    return used


def side_by_side(groups: Sequence[Sequence[Track]], part: Part, left_s: float | None) -> float:
    """Run each group's parts in turn, the groups at the same time; the seconds the case evaluation
    took (the wall time, the longest group's: the budget counts wall time).

    Args:
        groups: The tracks, by machine (`machine_groups`).
        part: A variant's part of the round.
        left_s: Seconds of the budget left when the parts start (None: no budget); each group
            spends it on its own.

    Raises:
        Whatever a part raised (the first group's first); on Ctrl-C the other threads are not
        waited for (stopping their workers ends them).
    """
    if len(groups) <= 1:
        return _in_turn(groups[0], part, left_s) if groups else 0.0
    started = time.perf_counter()
    threads = ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="quantgate-machine")
    try:
        for running in [threads.submit(_in_turn, group, part, left_s) for group in groups]:
            running.result()
    finally:
        threads.shutdown(wait=False, cancel_futures=True)
    return time.perf_counter() - started


def part_load(
    track: Track, here: tuple[CpuReading, CpuReading], ran: RoundRan, *, round: int
) -> RoundLoadEntry:
    """The load of the machine the variant's part of a round ran on: read on its node when its
    worker did (`ran.node`), else from this machine's readings before and after the part, `here`
    (a server variant's is not judged busy: its server's work on the cases counts as other
    processes')."""
    judged = capabilities(track.job.variant).memory != "server"
    node = ran.node
    start, end = (node.before, node.after) if node else here
    return RoundLoadEntry.extending(
        machine_load(start, end, judged=judged), round=round, variant=track.name, cases=len(ran.outcomes),
        node_id=node.node_id if node else None, host=node.host if node else None,
    )  # fmt: skip
