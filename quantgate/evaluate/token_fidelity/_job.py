"""What the run's token-fidelity step is given (`FidelityStep`), what one measurement needs
(`FidelityJob`), and what a variant's summary entry is given back (`figure_or_reason`), for the
run's reference and for a runtime pair's base alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quantgate.evaluate.scheduler._executor import VariantExecutor
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._files import FIDELITY_FILE
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry

__all__ = ["NO_POSITION", "SWITCHED_OFF", "FidelityJob", "FidelityStep", "figure_or_reason", "no_outputs"]

SWITCHED_OFF = "not measured: token fidelity was switched off (--no-token-fidelity)"
NO_POSITION = f"not measured: no position could be compared (see {FIDELITY_FILE})"


def no_outputs(followed: str) -> str:
    """Why nothing is measured against `followed` (the reference, a pair's base): no output to follow."""
    return f"not measured: no case answered validly by {followed} at first try"


def figure_or_reason(
    found: TokenFidelityEntry | None, reason: str | None
) -> tuple[TokenFidelityEntry | None, str | None]:
    """A variant's token fidelity and why it is missing, as its summary entry gets them: the
    measurement `found` when it compared a position; else why not (none compared, or `reason`,
    the reason it was not measured)."""
    if found is not None and found.positions:
        return found, None
    if found is not None:
        return None, NO_POSITION
    return None, reason or "not measured"


@dataclass(frozen=True, kw_only=True)
class FidelityJob:
    """What a token-fidelity measurement needs: the model every other follows (the run's reference,
    or a runtime pair's embedded base), the variants measured against it, the cases and the
    outputs followed, by case id; picklable (it crosses to a worker process or a cluster task)."""

    reference: Variant
    variants: tuple[Variant, ...]
    dataset: Dataset
    cases: tuple[Case, ...]
    outputs: dict[str, str]
    run_dir: Path
    max_repairs: int
    progress: bool

    def tags(self) -> dict[str, tuple[str, ...]]:
        """Each case's tags (its slices), by case id."""
        return {case.id: tuple(case.tags) for case in self.cases}


@dataclass(frozen=True, kw_only=True)
class FidelityStep:
    """The run's token-fidelity step: its variants and their summary `entries` (filled in place),
    the cases measured (the run's first ones), and how.

    Attributes:
        enabled: False under --no-token-fidelity (every variant gets that reason).
        executor: A remote one measures on the cluster; None here.
    """

    dataset: Dataset
    cases: Sequence[Case]
    variants: Sequence[Variant]
    reference_name: str
    entries: list[VariantEntry]
    run_dir: Path
    enabled: bool
    max_repairs: int
    progress: bool
    executor: VariantExecutor | None = None

    def ok(self) -> set[str]:
        """The variants evaluated (status ok)."""
        return {e.name for e in self.entries if e.status == "ok"}
