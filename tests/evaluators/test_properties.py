"""Property tests: no prediction, however malformed, makes scoring raise or leave [0, 1]."""

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators import CaseScorer, aggregate, score_fields

from .schemas import GOLD, INVOICE

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
SCORER = CaseScorer(schema=INVOICE)


@given(st.dictionaries(st.sampled_from(sorted(GOLD)), json_values))
@settings(max_examples=300, deadline=None)
def test_perturbed_fields_never_raise(changes):
    predicted = {**GOLD, **changes}
    result = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE)
    assert all(0.0 <= f.score <= 1.0 for f in result.fields.values())
    unchanged = [k for k in GOLD if k not in changes and k not in ("customer", "items")]
    assert all(result.fields[k].score == 1.0 for k in unchanged)


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_any_json_value_as_output_never_raises(value):
    score = SCORER(case_id="x", outputs=value if isinstance(value, dict) else None, reference_outputs=GOLD)
    assert score.fields is not None
    assert 0.0 <= (score.fields.score or 0.0) <= 1.0


@given(st.text(max_size=200))
@settings(max_examples=200, deadline=None)
def test_any_raw_text_never_raises(raw):
    summary = aggregate([SCORER(case_id="x", outputs=raw, reference_outputs=GOLD)])
    assert summary.format_validity in (0.0, 1.0)
    assert summary.field_accuracy is not None
    assert 0.0 <= summary.field_accuracy <= 1.0
