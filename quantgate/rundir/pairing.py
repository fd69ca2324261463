"""Records of two variants paired by case, as the paired statistics take them."""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.comparison import PairedCase
from quantgate.rundir.lines import CaseRecord


def paired_cases(reference: Mapping[str, CaseRecord], variant: Mapping[str, CaseRecord]) -> list[PairedCase]:
    """The labeled cases both sides have records for, in the reference's order."""
    return [
        PairedCase(
            case_id=case_id,
            tags=tuple(ref.tags),
            reference=ref.fields,
            variant=variant[case_id].fields,
            agreement=variant[case_id].agreement_fields,
        )
        for case_id, ref in reference.items()
        if case_id in variant and ref.fields
    ]
