"""Token fidelity's tail as table cells: what the terminal table, decision.md and the HTML report show.

One row per measured variant (the tail of KLD, the change in the reference's top-token probability,
top-1 agreement on structural and value tokens), and one per (variant, slice). The figures are those
of `evaluators.fidelity.TokenFidelitySummary`; a figure not measured shows as `MISSING`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluators.fidelity import TokenFidelitySummary
from quantgate.formatting import number, percent, points

__all__ = ["FidelityTail", "fidelity_tail"]

_HEADER = ["variant", "positions", "KLD mean", "KLD p99", "KLD p99.9", "KLD max", "Δp mean", "Δp p1",
           "Δp p5", "largest drop", "top-1", "top-1 structural", "top-1 value"]  # fmt: skip
_SLICE_HEADER = ["variant", "slice", "positions", "KLD mean", "KLD p99", "KLD max", "Δp p1", "largest drop",
                 "top-1 structural", "top-1 value"]  # fmt: skip
_NOTE = (
    "KLD: KL(reference || variant) per output position, nats; p99.9 needs 1,000 positions. Δp: the "
    "variant's probability of the reference's top token minus the reference's, in points (p1, p5: the "
    "worst drops; largest drop: the smallest Δp). Top-1 structural / value: top-1 agreement at the JSON "
    "answer's punctuation, keys and quotes / at its values (see docs/token-fidelity.md)."
)


@dataclass(frozen=True, kw_only=True)
class FidelityTail:
    """The tail tables.

    Attributes:
        header: The variants table's column titles.
        rows: One row of text cells per measured variant.
        slice_header: The slices table's column titles.
        slice_rows: One row per (variant, slice); empty when no case has a tag.
        note: What the columns mean.
    """

    header: list[str]
    rows: list[list[str]]
    slice_header: list[str]
    slice_rows: list[list[str]]
    note: str


def _kld(value: float | None) -> str:
    return number(value, "{:.4f}")


def _row(name: str, s: TokenFidelitySummary) -> list[str]:
    return [name, str(s.positions), _kld(s.kld_mean), _kld(s.kld_p99), _kld(s.kld_p999), _kld(s.kld_max),
            points(s.delta_p_mean), points(s.delta_p_p1), points(s.delta_p_p5), points(s.delta_p_min),
            percent(s.top1_agreement), percent(s.structural_top1_agreement),
            percent(s.value_top1_agreement)]  # fmt: skip


def _slice_row(name: str, tag: str, s: TokenFidelitySummary) -> list[str]:
    return [name, tag, str(s.positions), _kld(s.kld_mean), _kld(s.kld_p99), _kld(s.kld_max),
            points(s.delta_p_p1), points(s.delta_p_min), percent(s.structural_top1_agreement),
            percent(s.value_top1_agreement)]  # fmt: skip


def fidelity_tail(variants: Sequence[tuple[str, TokenFidelitySummary | None]]) -> FidelityTail | None:
    """The tail tables of the variants whose token fidelity was measured.

    Args:
        variants: Each variant's name (as it should show) and its token fidelity, or None.

    Returns:
        The tables, or None when no variant has token fidelity.
    """
    measured = [(name, summary) for name, summary in variants if summary is not None]
    if not measured:
        return None
    return FidelityTail(
        header=list(_HEADER),
        rows=[_row(name, summary) for name, summary in measured],
        slice_header=list(_SLICE_HEADER),
        slice_rows=[
            _slice_row(name, tag, figures)
            for name, summary in measured
            for tag, figures in summary.slices.items()
        ],
        note=_NOTE,
    )
