"""The embedding figures as a table: printed by `quantgate embed` and `run --embeddings`."""

from __future__ import annotations

from collections.abc import Sequence

from quantgate._formatting import MISSING, fixed, points
from quantgate.rundir._embedding_files import EmbeddingEntry, EmbeddingsFile

_HEADER = (
    "variant", "file MiB", "cos mean", "cos p5", "cos min", "nbr recall@k", "recall@k", "Δ recall",
    "MRR", "Δ MRR", "nDCG@k", "texts/s", "index s", "vectors KiB",
)  # fmt: skip


def embedding_rows(
    variants: Sequence[tuple[str, float | None, EmbeddingEntry | None, str | None]],
) -> list[tuple[str, ...]]:
    """Rows of strings, header first, from (name, model file MiB, figures, error) per variant."""
    rows: list[tuple[str, ...]] = [_HEADER]
    for name, file_mb, entry, error in variants:
        if entry is None:
            rows.append((name, "skipped", *[""] * 11, (error or "")[:60]))
            continue
        rows.append(
            (
                name, fixed(file_mb, 0),
                fixed(entry.cosine_mean, 4), fixed(entry.cosine_p5, 4), fixed(entry.cosine_min, 4),
                fixed(entry.neighbour_recall_at_k, 3), fixed(entry.recall_at_k, 3),
                points(entry.recall_delta), fixed(entry.mrr, 3), points(entry.mrr_delta),
                fixed(entry.ndcg_at_k, 3),
                fixed(entry.embeddings_per_s, 1), fixed(entry.index_build_s, 2),
                fixed(entry.vector_bytes, 0, scale=1 / 1024),
            )
        )  # fmt: skip
    return rows


def render_rows(rows: list[tuple[str, ...]], *, k: int | None) -> str:
    """A fixed-width text table with its legend."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.append(
        f"k = {k}; cos = cosine similarity to the reference's vector of the same text; nbr recall = share "
        f"of the reference's exact top-k neighbours found; {MISSING} = not measured (no labels, or the "
        "reference itself)"
    )
    return "\n".join(lines)


def embeddings_table(document: EmbeddingsFile) -> str:
    """The table of embeddings.json."""
    rows = embedding_rows(
        [
            (v.name, v.file_size_bytes / 2**20 if v.file_size_bytes else None, v.embeddings, v.error)
            for v in document.variants
        ]
    )
    return render_rows(rows, k=document.k)
