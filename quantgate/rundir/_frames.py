"""pandas views of a run's records: one row per case x variant. The records stay the source of
truth; a frame is built from them on request (`Run.to_frame`), so reading a run needs no pandas."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from quantgate.rundir._lines import CaseRecord

__all__ = ["records_frame"]

_NESTED = {"fields", "outcomes", "agreement_fields", "attempt_timings"}


def records_frame(records: Iterable[CaseRecord]) -> pd.DataFrame:
    """A DataFrame view of records, one row per case x variant (no record: no row, the columns kept)."""
    rows = []
    for record in records:
        row = record.model_dump(exclude=_NESTED)
        row.update({f"field:{name}": score for name, score in record.fields.items()})
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=[name for name in CaseRecord.model_fields if name not in _NESTED])
    return pd.DataFrame(rows)
