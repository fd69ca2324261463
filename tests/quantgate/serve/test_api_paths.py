"""The root rule for every file a request leads to: variants files and the model files they name,
`llamacpp:` shorthands, every file of a dataset directory; refused (403) before anything is
opened, and no answer or run error quotes a file's content."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quantgate.inputs._variants import load_variants_file
from quantgate.serve._paths import DATASET_FILES
from tests.quantgate.inputs.tiny_gguf import write_tiny_gguf
from tests.quantgate.serve.api_client import until, until_started

SECRET = "root:$6$hash:19000:0:99999:7:::\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the root, like /etc/shadow."""
    path = tmp_path / "shadow"
    path.write_text(SECRET)
    return path


def _variants(root: Path, model: str, name: str = "passwd.toml") -> str:
    (root / name).write_text(f'[[variants]]\nname = "Q4"\nbackend = "llamacpp"\nmodel = "{model}"\n')
    return name


def _refused(client: TestClient, body: dict[str, object], status: int, message: str) -> None:
    answer = client.post("/runs", json=body)
    assert (answer.status_code, message in answer.json()["detail"]) == (status, True), answer.text
    assert "root:" not in answer.text
    assert client.get("/runs").json() == []


def test_a_model_file_named_in_a_variants_file_must_be_inside_the_roots(
    client: TestClient, root: Path, secret: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _variants(root, str(secret))
    _refused(
        client, {"dataset": "ok", "variants": [name]}, 403, f"variant Q4: model file '{secret}' is outside"
    )
    (root / "link.gguf").symlink_to(secret)
    name = _variants(root, str(root / "link.gguf"))
    _refused(client, {"dataset": "ok", "variants": [name]}, 403, "is outside the server's roots")
    name = _variants(root, "../shadow")  # relative to the server's working directory
    monkeypatch.chdir(root)
    _refused(client, {"dataset": "ok", "variants": [name]}, 403, "model file '../shadow' is outside")


def test_a_file_inside_the_roots_that_is_no_gguf_is_refused_without_its_bytes(
    client: TestClient, root: Path
) -> None:
    (root / "shadow.gguf").write_text(SECRET)
    name = _variants(root, str(root / "shadow.gguf"))
    _refused(client, {"dataset": "ok", "variants": [name]}, 422, "is not a complete GGUF file")
    _refused(client, {"dataset": "ok", "variants": ["llamacpp:shadow.gguf"]}, 422, "not a complete GGUF file")
    (root / "keys.toml").write_text(SECRET)  # a variants file that is no TOML
    _refused(
        client, {"dataset": "ok", "variants": ["keys.toml"]}, 422, "variants file 'keys.toml': not valid TOML"
    )
    (root / "wrong.toml").write_text('secret = "root:x"\n')
    _refused(client, {"dataset": "ok", "variants": ["wrong.toml"]}, 422, "not a valid variants file")


def test_model_files_inside_the_roots_go_to_the_run_by_their_resolved_path(
    client: TestClient, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    write_tiny_gguf(root / "tiny.gguf")
    (root / "alias.gguf").symlink_to(root / "tiny.gguf")
    name = _variants(root, "alias.gguf")
    answer = client.post(
        "/runs", json={"dataset": "ok", "variants": [name, "llamacpp:tiny.gguf", "ollama:g:1b"]}
    )
    assert answer.status_code == 202, answer.text
    state = until(client, answer.json()["id"], "complete")
    arguments = client.get(f"/runs/{state['id']}/summary").json()["arguments"]
    written = load_variants_file(Path(arguments[arguments.index("--variants") + 1]))
    assert [(v.name, v.model) for v in written.variants] == [
        ("Q4", str(root / "tiny.gguf")), ("tiny", str(root / "tiny.gguf")), ("g:1b", "g:1b")
    ]  # fmt: skip


@pytest.mark.parametrize("name", DATASET_FILES)
def test_a_dataset_file_that_points_out_of_the_roots_is_refused(
    client: TestClient, root: Path, secret: Path, name: str
) -> None:
    (root / "ok" / name).symlink_to(secret)
    _refused(client, {"dataset": "ok"}, 403, f"dataset file 'ok/{name}' is outside the server's roots")


def test_a_dataset_file_that_is_a_pipe_is_refused(client: TestClient, root: Path) -> None:
    os.mkfifo(root / "ok" / "cases.jsonl")
    _refused(client, {"dataset": "ok"}, 422, "dataset file 'ok/cases.jsonl' is not a regular file")


def test_a_failed_runs_error_quotes_no_bytes_of_a_file(client: TestClient) -> None:
    job = client.post("/runs", json={"dataset": "leaks"}).json()
    error = until(client, job["id"], "failed")["error"]
    assert "is not a GGUF file: it starts with b'…', not b'…'" in error
    assert "root" not in error


def test_a_file_changed_while_its_run_waited_is_refused_when_it_starts(
    client: TestClient, root: Path, secret: Path
) -> None:
    slow = client.post("/runs", json={"dataset": "slow"}).json()
    waiting = client.post("/runs", json={"dataset": "ok"}).json()
    (root / "ok" / "cases.jsonl").symlink_to(secret)
    until_started(client, slow["id"])
    client.post(f"/runs/{slow['id']}/cancel")
    state = until(client, waiting["id"], "failed", "complete")
    assert state["error"] == "refused at start: dataset file 'ok/cases.jsonl' is outside the server's roots"
    assert state["progress"]["run_dir"] is None
