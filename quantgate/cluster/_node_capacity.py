"""How many variants each node of a Ray cluster keeps warm at once, judged from that node's memory.

A run in rounds over actors (`quantgate.cluster._actor_worker`) places each variant's actor on the
node `node_for` picks for what it declares, so the driver knows each variant's node before any
loads. Each such node is asked, by a small task pinned there, how much memory it has available
(`psutil`, as the local rule reads this machine's), and the local rule (`warm_capacity`: all that
fit in 80% of it, the largest first, at least one) is applied to the variants of that node alone.
A variant that stays in the driver (a chat model given from Python) is judged on the driver's
machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psutil

from quantgate.backends import capabilities
from quantgate.cluster._actor_worker import node_for
from quantgate.cluster._resources import task_resources
from quantgate.evaluate.scheduler._pool import WarmCapacity, warm_capacity
from quantgate.inputs._variants import Variant

__all__ = ["available_mb", "node_capacity"]

_ASK_S = 60.0
"""How long a node may take to say how much memory it has available."""


def available_mb() -> float:
    """The memory available on the machine this runs on, in MiB (run on a node as a Ray task)."""
    return psutil.virtual_memory().available / 2**20


def _node_available_mb(ray: Any, node: str) -> float:
    """The memory available on `node`, read there by a task that holds no resources."""
    strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node, soft=False)
    task = ray.remote(num_cpus=0, max_retries=0)(available_mb)
    return float(ray.get(task.options(scheduling_strategy=strategy).remote(), timeout=_ASK_S))


def node_capacity(ray: Any, variants: Sequence[Variant]) -> WarmCapacity:
    """Each variant's node (the one its actor will be placed on) and how many variants each node
    keeps loaded at once, from its own available memory; a variant no node can take is left on
    the driver's machine (it is skipped when it loads)."""
    nodes = ray.nodes()
    machine_of: dict[str, str | None] = {}
    for variant in variants:
        if capabilities(variant).process_isolation:
            machine_of[variant.name] = node_for(task_resources(variant, nodes), nodes, set())
        else:  # kept in the driver
            machine_of[variant.name] = None
    machines: dict[str | None, int] = {}
    for machine in set(machine_of.values()):
        there = [v for v in variants if machine_of[v.name] == machine]
        memory = available_mb() if machine is None else _node_available_mb(ray, machine)
        machines[machine] = warm_capacity(there, available_mb=memory)
    return WarmCapacity(machines=machines, machine_of=machine_of)
