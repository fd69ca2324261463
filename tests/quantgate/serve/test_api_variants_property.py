"""Generated variants files in a root against POST /runs: whatever a file names, no path outside
the roots reaches the run (nor is hashed), no `api_key_env` the operator did not allow, and never
a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from quantgate.inputs._variants import load_variants_file
from quantgate.serve import JobQueue, create_app
from tests.quantgate.inputs.tiny_gguf import write_tiny_gguf
from tests.quantgate.serve.api_client import LOCAL

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
PATHS = st.sampled_from(
    ["/etc/passwd", "/etc", "../outside", "~/x", "~root/x", "ROOT/escape/passwd", "ROOT/tiny.gguf",
     "ROOT/missing.gguf", "ROOT/ok", "ROOT/../outside", "", ".", "tiny.gguf", "/dev/zero", "ROOT/x.toml"]
) | TEXT  # fmt: skip
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "model_file": PATHS,
        "api_key_env": st.sampled_from(["PATH", "ALLOWED", "QUANTGATE_TOKEN", "FAKE_SECRET"]),
        "base_url": st.just("http://127.0.0.1:9/v1"),
    },
)
ENTRY = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["a", "b", "_x", "c d"]),
        "backend": st.sampled_from(["llamacpp", "ollama", "openai"]),
    },
    optional={"model": PATHS, "options": OPTIONS, "sha256": st.just("0" * 64)},
)
FILES = st.fixed_dictionaries({"variants": st.lists(ENTRY, min_size=1, max_size=3)})
SHORTHANDS = st.lists(
    st.sampled_from(
        ["ollama:x.toml", "llamacpp:ROOT/x.toml", "llamacpp:ROOT/tiny.gguf", "ollama:_x", "openai:m@http://x"]
    ),
    max_size=2,
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path, Path]]:
    """The API over a root with a GGUF, a dataset and a symlink out; runs are `true`."""
    root = tmp_path_factory.mktemp("root")
    (root / "ok").mkdir()
    write_tiny_gguf(root / "tiny.gguf")
    (root / "x.toml").write_text('[[variants]]\nname = "z"\nbackend = "ollama"\nmodel = "z"\n')
    (root / "escape").symlink_to("/etc")
    out = root.parent / "runs"
    app = create_app(roots=[root], out=out, queue=JobQueue(out, command=("true",), allow_env=["ALLOWED"]))
    with TestClient(app, raise_server_exceptions=False, base_url=LOCAL) as client:
        yield client, root, out


def _with_root(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return value.replace("ROOT", str(root))
    if isinstance(value, dict):
        return {key: _with_root(item, root) for key, item in value.items()}
    return [_with_root(item, root) for item in value] if isinstance(value, list) else value


@settings(max_examples=150, deadline=None, derandomize=True)
@given(document=FILES, shorthands=SHORTHANDS)
def test_no_variants_file_leads_outside_the_roots(
    served: tuple[TestClient, Path, Path], document: dict[str, Any], shorthands: list[str]
) -> None:
    client, root, out = served
    (root / "gen.toml").write_text(tomli_w.dumps(_with_root(document, root)))
    answer = client.post(
        "/runs", json={"dataset": "ok", "variants": ["gen.toml", *_with_root(shorthands, root)]}
    )
    assert answer.status_code in (202, 403, 422, 429), (answer.status_code, answer.text)
    if answer.status_code != 202:
        return
    for variant in load_variants_file(out / answer.json()["id"] / "variants.toml").variants:
        named = [variant.options.get("model_file"), variant.model if variant.backend == "llamacpp" else None]
        assert all(Path(path).resolve().is_relative_to(root) for path in named if path is not None), variant
        assert variant.options.get("api_key_env") in (None, "ALLOWED"), variant
