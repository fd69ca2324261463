"""What a variant's Ray task declares (CPU, memory, GPU, custom resources), and whether any node
of the cluster has it.

A variant's `resources` (in its spec) are taken as given. Those it does not give default to:
- a backend whose model lives in the evaluating process (embedded llama.cpp): `CPU` = the threads
  its options give (`BackendOptions.cpu_threads`: llama.cpp's `n_threads`), else every CPU of the
  largest node (llama.cpp uses all physical cores by default, so two such variants must not share a
  node's cores, or their latencies mix); `memory`
  = 1.5 x the model file plus 512 MiB, when the file size is known;
- a backend whose model lives in a server (Ollama): `CPU` = 1, the client's share. Give such
  variants a custom resource (`{ollama = 1}`) that only nodes with an Ollama server have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from quantgate.backends import backend_options, capabilities
from quantgate.inputs._variants import Variant

__all__ = ["Node", "infeasible", "task_resources", "to_ray_options"]

_MODEL_MEMORY_FACTOR = 1.5
"""Resident memory of an embedded model relative to its file: weights, KV cache, buffers."""
_PROCESS_MEMORY_BYTES = 512 * 2**20
"""A worker process's own memory (Python, Ray, langgraph), besides the model."""

Node = Mapping[str, Any]
"""One entry of `ray.nodes()`: `Alive`, `NodeManagerHostname`, `Resources` (name -> amount)."""


def task_resources(variant: Variant, nodes: Sequence[Node]) -> dict[str, float]:
    """The resources a task evaluating `variant` declares, its spec's and the defaults."""
    declared = dict(variant.resources)
    if capabilities(variant).memory == "process":
        threads = backend_options(variant).cpu_threads()
        largest = max((float(_alive(n).get("CPU", 0.0)) for n in nodes), default=1.0)
        declared.setdefault("CPU", float(threads) if threads else max(largest, 1.0))
        if variant.file_size_bytes:
            declared.setdefault(
                "memory", variant.file_size_bytes * _MODEL_MEMORY_FACTOR + _PROCESS_MEMORY_BYTES
            )
    else:
        declared.setdefault("CPU", 1.0)
    return declared


def _alive(node: Node) -> Mapping[str, float]:
    return node.get("Resources", {}) if node.get("Alive") else {}


def infeasible(resources: Mapping[str, float], nodes: Sequence[Node]) -> str | None:
    """Why no alive node has all of `resources` (None when one has): the nodes and what they have."""
    if any(all(_alive(n).get(name, 0.0) >= amount for name, amount in resources.items()) for n in nodes):
        return None
    wanted = ", ".join(f"{name} {_amount(name, amount)}" for name, amount in sorted(resources.items()))
    have = "; ".join(
        f"{n.get('NodeManagerHostname') or n.get('NodeManagerAddress')}: "
        + ", ".join(
            f"{name} {_amount(name, amount)}"
            for name, amount in sorted(_alive(n).items())
            if not name.startswith("node:") and name != "object_store_memory"
        )
        for n in nodes
        if n.get("Alive")
    )
    return (
        f"no node of the Ray cluster has what its task declares ({wanted}); "
        f"the nodes have: {have or 'none alive'}"
    )


def _amount(name: str, amount: float) -> str:
    return f"{amount / 2**30:.1f} GiB" if name == "memory" else f"{amount:g}"


def to_ray_options(resources: Mapping[str, float]) -> dict[str, Any]:
    """`resources` as keyword arguments of a Ray task's `.options()`."""
    custom = {name: amount for name, amount in resources.items() if name not in ("CPU", "GPU", "memory")}
    options: dict[str, Any] = {"num_cpus": resources.get("CPU", 0.0), "resources": custom}
    if "GPU" in resources:
        options["num_gpus"] = resources["GPU"]
    if "memory" in resources:
        options["memory"] = resources["memory"]
    return options
