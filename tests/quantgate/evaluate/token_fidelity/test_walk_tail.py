"""Ollama's walks: Δp and the structural/value kind of each position both walks observed."""

import math

import pytest

from quantgate.backends._forcing import ForcedPositions
from quantgate.evaluate.token_fidelity._measurement import _variant_record

TOKENS = ('{"', "a", '":', " 1", "}")


def _lists(*probabilities: dict[str, float]) -> tuple[dict[str, float] | None, ...]:
    return tuple({t: math.log(p) for t, p in top.items()} if top else None for top in probabilities)


def test_a_walk_record_has_delta_p_and_kinds_of_the_observed_positions():
    reference = ForcedPositions(
        tokens=TOKENS,
        top=_lists({'{"': 0.9}, {"a": 0.8, "b": 0.1}, {'":': 0.99}, {" 1": 0.6, " 2": 0.3}, {}),
        requests=1,
    )
    variant = ForcedPositions(
        tokens=TOKENS,
        top=_lists({'{"': 0.95}, {"b": 0.5, "a": 0.4}, {}, {" 2": 0.7, " 1": 0.2}, {"}": 0.9}),
        requests=2,
    )
    record, fidelity = _variant_record("Q4", "c1", reference, variant, ("lang:en",))
    assert fidelity is not None
    # positions 2 ('":', the variant ended there) and 4 ('}', the reference did) are left out
    assert record["positions"] == 3
    assert record["unobserved"] == 2
    assert record["kinds"] == ["structural", "structural", "value"]
    assert record["delta_p"] == pytest.approx([0.95 - 0.9, 0.4 - 0.8, 0.2 - 0.6])
    assert record["top1"] == [True, False, False]
    assert fidelity.tags == ("lang:en",)
