"""Generated bodies against POST /runs: whatever the body, the answer is never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from quantgate.serve import JobQueue, create_app
from tests.quantgate.serve.api_client import LOCAL

ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40)
"""Any code points: NULs, control characters, lone surrogates."""
PATHS = st.sampled_from(
    ["ok", "missing", "/etc", "../x", "escape", "invoices", "~nobody-here/x", "~", "ok/../../x", "a" * 300,
     "variants.toml", "llamacpp:/etc/passwd", "llamacpp:model.gguf", "ollama:g:1b", "llamacpp:", "ollama:"]
) | ANY_TEXT  # fmt: skip
NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True, allow_infinity=True)
)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
GATE_KEYS = st.sampled_from(["max_accuracy_drop", "min_cases", "confidence", "min_format_validity", "x"])
BODIES = (
    st.fixed_dictionaries(
        {},
        optional={
            "dataset": PATHS | JSON,
            "variants": st.lists(PATHS, max_size=70) | JSON,
            "limit": NUMBERS | JSON,
            "gates": st.dictionaries(GATE_KEYS, NUMBERS | JSON, max_size=4) | JSON,
            "token_fidelity": st.booleans() | JSON,
            "report": JSON,
            "embeddings": JSON,
            "timeout_s": NUMBERS | JSON,
        },
    )
    | st.dictionaries(ANY_TEXT, JSON, max_size=5)
    | JSON
)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The API over a root with a dataset directory, a variants file and a symlink out; runs are
    `true` (they end at once), so the queue stays short."""
    root = tmp_path_factory.mktemp("root")
    (root / "ok").mkdir()
    (root / "variants.toml").write_text('[[variants]]\nname = "a"\nbackend = "ollama"\nmodel = "a"\n')
    (root / "escape").symlink_to("/etc")
    out = root.parent / "runs"
    app = create_app(roots=[root], out=out, queue=JobQueue(out, command=("true",)))
    with TestClient(app, raise_server_exceptions=False, base_url=LOCAL) as test_client:
        yield test_client


@settings(max_examples=200, deadline=None, derandomize=True)  # the same bodies in CI
@given(body=BODIES)
def test_no_body_gets_a_500(client: TestClient, body: Any) -> None:
    answer = client.post("/runs", content=json.dumps(body), headers={"content-type": "application/json"})
    assert answer.status_code in (202, 400, 403, 413, 422, 429), (answer.status_code, answer.text)
    assert len(answer.content) < 20_000
