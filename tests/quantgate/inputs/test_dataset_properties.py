"""Property tests: malformed dataset files give errors that name their file and line."""

import json
import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from quantgate.inputs._dataset import check_dataset
from tests.fakes import TOTAL_SCHEMA, case, write_dataset

junk_lines = st.one_of(
    st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "\n" not in s and "\r" not in s),
    st.builds(
        lambda v: json.dumps({"id": "j", "text": "t", "expected": v}),
        st.dictionaries(st.text(max_size=5), st.integers()),
    ),
    st.builds(lambda i: json.dumps({"id": i, "text": "t"}), st.integers() | st.none()),
)


@given(st.lists(junk_lines, min_size=1, max_size=5))
@settings(max_examples=150, deadline=None)
def test_junk_lines_are_reported_with_their_line(junk):
    lines = [json.dumps(case(0)), *junk, json.dumps(case(99))]
    with tempfile.TemporaryDirectory() as tmp:
        root = write_dataset(Path(tmp) / "d", lines, schema=TOTAL_SCHEMA)
        dataset, problems = check_dataset(root)
    errors = [p for p in problems if p.severity == "error"]
    for error in errors:
        assert re.fullmatch(r"cases\.jsonl:\d+: .+", str(error), flags=re.DOTALL), str(error)
        assert error.line is not None
        assert 2 <= error.line <= len(junk) + 1
    if dataset is None:
        assert errors
    else:
        assert next(c.id for c in dataset.cases) == "c0"
