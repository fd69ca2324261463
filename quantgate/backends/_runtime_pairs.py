"""Runtime pairs: variants that serve the same model file (same sha256) on different backends, and
which of them is the pair's base (the embedded one, where quantgate runs the file itself).

Chosen here, from what the backends declare, for the run's token-fidelity step
(`quantgate.evaluate.token_fidelity._pair_fidelity`) and the decision's runtime comparison
(`quantgate.decide._runtimes`) alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from quantgate.backends import BackendError, backend_capabilities
from quantgate.rundir._runtime_comparison import BaseReason

__all__ = ["embedded_backend", "same_file_pairs"]


def embedded_backend(backend: str) -> bool:
    """Whether the backend registered as `backend` runs the model in quantgate's own process from
    the model file (declared: `model_file` and `memory == "process"`; the built-in llama.cpp).

    An unknown backend (one a script registered in another process, or an installed plugin that
    cannot be loaded here) declares nothing, so it is not embedded.
    """
    try:
        declared = backend_capabilities(backend)
    except BackendError:
        return False
    return declared.model_file and declared.memory == "process"


def same_file_pairs(
    listed: Sequence[tuple[str, str, str | None]], reference: str
) -> list[tuple[str, str, BaseReason]]:
    """(base, variant, why the base) for every variant that shares its model file with a base on
    another backend, in run order.

    Args:
        listed: (name, backend, sha256) of the run's evaluated variants, in run order.
        reference: The run's reference.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for name, backend, sha256 in listed:
        if sha256:
            groups.setdefault(sha256, []).append((name, backend))
    pairs: list[tuple[str, str, BaseReason]] = []
    for members in groups.values():
        if len({backend for _, backend in members}) < 2:
            continue
        embedded = [m for m in members if embedded_backend(m[1])]
        with_reference = [m for m in members if m[0] == reference]
        why: BaseReason = "embedded" if embedded else "reference" if with_reference else "listed_first"
        base = (embedded or with_reference or members)[0]
        pairs += [(base[0], name, why) for name, backend in members if backend != base[1]]
    return pairs
