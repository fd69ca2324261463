"""Token fidelity's tail as table cells: what the terminal table, decision.md and the HTML report show.

One row per measured variant (the tail of KLD, the change in the reference's top-token probability,
top-1 agreement on structural and value tokens), and one per (variant, slice). The figures are those
of `evaluators.fidelity.TokenFidelitySummary`; a figure not measured shows as `MISSING`.
`TAIL_COLUMNS` is the one definition of each figure's title and format: `quantgate compare`, a
suite's decision and the notebooks show `HEADLINE`'s figures through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluators.fidelity import TokenFidelitySummary
from quantgate._formatting import number, percent, points
from quantgate.rundir._summary import RunSummary

__all__ = [
    "HEADLINE",
    "TAIL_COLUMNS",
    "FidelityTail",
    "TailColumn",
    "fidelity_tail",
    "run_fidelity_tail",
    "tail_cells",
    "tail_titles",
]


@dataclass(frozen=True)
class TailColumn:
    """One figure of token fidelity as a column: its title and how its value shows.

    Attributes:
        figure: The `TokenFidelitySummary` attribute it shows.
        title: The column's title.
        format: The value as a cell; `MISSING` for None.
    """

    figure: str
    title: str
    format: Callable[[float | None], str]

    def cell(self, summary: TokenFidelitySummary | None) -> str:
        """This figure of `summary` as a cell; `MISSING` when there is no summary or no figure."""
        return self.format(getattr(summary, self.figure) if summary is not None else None)


def _kld(value: float | None) -> str:
    return number(value, "{:.4f}")


def _count(value: float | None) -> str:
    return number(value, "{:d}")


_COLUMNS = (
    TailColumn("positions", "positions", _count),
    TailColumn("kld_mean", "KLD mean", _kld),
    TailColumn("kld_p99", "KLD p99", _kld),
    TailColumn("kld_p999", "KLD p99.9", _kld),
    TailColumn("kld_max", "KLD max", _kld),
    TailColumn("delta_p_mean", "Δp mean", points),
    TailColumn("delta_p_p1", "Δp p1", points),
    TailColumn("delta_p_p5", "Δp p5", points),
    TailColumn("delta_p_min", "largest drop", points),
    TailColumn("top1_agreement", "top-1", percent),
    TailColumn("structural_top1_agreement", "top-1 structural", percent),
    TailColumn("value_top1_agreement", "top-1 value", percent),
)
TAIL_COLUMNS: dict[str, TailColumn] = {column.figure: column for column in _COLUMNS}
"""Every figure of the tail by its `TokenFidelitySummary` attribute: the one definition of its title
and format, for every table that shows it."""

HEADLINE = ("kld_mean", "kld_p99", "delta_p_min", "structural_top1_agreement", "value_top1_agreement")
"""The figures shown where there is room for a few only (`quantgate compare`, a suite's decision,
the notebooks): the mean and the tail of KLD, the largest drop of the reference's top-token
probability, top-1 agreement on structural and on value tokens."""

_SLICE_FIGURES = ("positions", "kld_mean", "kld_p99", "kld_max", "delta_p_p1", "delta_p_min",
                  "structural_top1_agreement", "value_top1_agreement")  # fmt: skip
_NOTE = (
    "KLD: KL(reference || variant) per output position, nats; p99.9 needs 1,000 positions. Δp: the "
    "variant's probability of the reference's top token minus the reference's, in points (p1, p5: the "
    "worst drops; largest drop: the smallest Δp). Top-1 structural / value: top-1 agreement at the JSON "
    "answer's punctuation, keys and quotes / at its values (see docs/token-fidelity.md)."
)
_VERIFIED_NOTE = (
    ' Rows marked "verified": every position a candidate read while verifying the reference\'s answers, '
    "against the reference's top-8 log-probabilities kept as it decoded them: KLD is a lower bound (the "
    "rest of the vocabulary one bucket), top-1 and Δp exact; the other rows: full-vocabulary teacher "
    "forcing of the first cases."
)
VERIFIED_SUFFIX = " verified"
"""How a variant's row of verified-case fidelity is named: `Q8_0 verified`."""


def tail_titles(figures: Sequence[str] = HEADLINE) -> list[str]:
    """The column titles of `figures` (keys of `TAIL_COLUMNS`)."""
    return [TAIL_COLUMNS[figure].title for figure in figures]


def tail_cells(summary: TokenFidelitySummary | None, figures: Sequence[str] = HEADLINE) -> list[str]:
    """The cells of `figures` for one variant; each `MISSING` when `summary` is None (not measured)."""
    return [TAIL_COLUMNS[figure].cell(summary) for figure in figures]


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
    every = list(TAIL_COLUMNS)
    return FidelityTail(
        header=["variant", *tail_titles(every)],
        rows=[[name, *tail_cells(summary, every)] for name, summary in measured],
        slice_header=["variant", "slice", *tail_titles(_SLICE_FIGURES)],
        slice_rows=[
            [name, tag, *tail_cells(figures, _SLICE_FIGURES)]
            for name, summary in measured
            for tag, figures in summary.slices.items()
        ],
        note=_NOTE,
    )


def run_fidelity_tail(summary: RunSummary) -> FidelityTail | None:
    """The tail tables of a run: each variant's teacher-forced token fidelity, then the fidelity of
    the candidates' verified cases (`VariantEntry.verified_fidelity`), named with `VERIFIED_SUFFIX`."""
    rows: list[tuple[str, TokenFidelitySummary | None]] = [
        (e.name, e.token_fidelity) for e in summary.variants
    ]
    verified = [
        (e.name + VERIFIED_SUFFIX, e.verified_fidelity) for e in summary.variants if e.verified_fidelity
    ]
    tail = fidelity_tail([*rows, *verified])
    if tail is None or not verified:
        return tail
    return FidelityTail(
        header=tail.header,
        rows=tail.rows,
        slice_header=tail.slice_header,
        slice_rows=tail.slice_rows,
        note=tail.note + _VERIFIED_NOTE,
    )
