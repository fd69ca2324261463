"""The HTTP API with FastAPI's TestClient; runs are a stand-in process (fake_quantgate.py), not models."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quantgate.inputs._dataset import bundled_root
from quantgate.inputs._variants import load_variants_file
from quantgate.serve import JobQueue, RunRequest, create_app, run_arguments
from tests.quantgate.serve.api_client import FAKE, LOCAL, TOKEN, until, until_started


def test_every_request_needs_the_token(client: TestClient) -> None:
    for path in ("/health", "/runs", "/docs", "/openapi.json"):
        assert client.get(path, headers={"Authorization": ""}).status_code == 401
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.post("/runs", json={"dataset": "ok"}, headers={"Authorization": ""}).status_code == 401
    assert client.get("/health").json()["status"] == "ok"
    assert client.get("/docs").status_code == 200
    assert "/runs/{job_id}/decision" in client.get("/openapi.json").json()["paths"]


def test_a_run_goes_from_queued_to_complete_with_its_files(client: TestClient) -> None:
    answer = client.post("/runs", json={"dataset": "ok", "limit": 4, "gates": {"min_cases": 2}})
    assert answer.status_code == 202
    job = answer.json()
    assert job["status"] in ("queued", "running")
    state = until(client, job["id"], "complete", "failed")
    assert (state["status"], state["outcome"], state["exit_status"]) == ("complete", "candidate_passes", 0)
    assert state["progress"] == {
        "run_dir": state["progress"]["run_dir"],
        "run_status": "complete", "variants_done": 2, "variants_total": 2, "cases_recorded": 3,
    }  # fmt: skip
    assert client.get(f"/runs/{job['id']}/decision").json()["recommended"] == "Q4_K_M"
    summary = client.get(f"/runs/{job['id']}/summary").json()
    arguments = summary["arguments"]
    assert arguments[arguments.index("--limit") + 1] == "4"
    assert Path(arguments[arguments.index("--gates") + 1]).read_text() == "min_cases = 2\n"
    report = client.get(f"/runs/{job['id']}/report")
    assert report.headers["content-type"].startswith("text/html")
    assert "the report" in report.text
    assert [r["id"] for r in client.get("/runs").json()] == [job["id"]]


def test_runs_wait_their_turn_and_a_failed_one_does_not_stop_the_server(client: TestClient) -> None:
    slow = client.post("/runs", json={"dataset": "slow"}).json()
    failing = client.post("/runs", json={"dataset": "fails"}).json()
    after = client.post("/runs", json={"dataset": "ok"}).json()
    until_started(client, slow["id"])
    assert client.get(f"/runs/{failing['id']}").json()["status"] == "queued"
    assert client.get("/health").json() | {"status": "ok"} == {
        "status": "ok", "version": client.get("/health").json()["version"], "queued": 2, "running": 1,
    }  # fmt: skip
    stopped = client.post(f"/runs/{slow['id']}/cancel").json()
    assert stopped["status"] in ("running", "cancelled")
    assert until(client, slow["id"], "cancelled")["progress"]["run_status"] == "interrupted"
    failed = until(client, failing["id"], "failed", "complete")
    assert failed["status"] == "failed"
    assert "exited with 1" in str(failed["error"])
    assert "llama.cpp could not load it" in str(failed["error"])
    assert until(client, after["id"], "complete", "failed")["status"] == "complete"


def test_a_queued_run_cancelled_never_starts(client: TestClient) -> None:
    slow = client.post("/runs", json={"dataset": "slow"}).json()
    queued = client.post("/runs", json={"dataset": "ok"}).json()
    assert client.post(f"/runs/{queued['id']}/cancel").json()["status"] == "cancelled"
    until_started(client, slow["id"])
    client.post(f"/runs/{slow['id']}/cancel")
    until(client, slow["id"], "cancelled")
    time.sleep(0.3)
    state = client.get(f"/runs/{queued['id']}").json()
    assert (state["status"], state["started_at"], state["progress"]["run_dir"]) == ("cancelled", None, None)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"dataset": "/etc"}, 403, "dataset '/etc' is outside the server's roots"),
        ({"dataset": "../"}, 403, "outside the server's roots"),
        ({"dataset": "escape"}, 403, "dataset 'escape' is outside the server's roots"),
        ({"dataset": "missing"}, 422, "dataset 'missing': no such file or directory"),
        ({"dataset": "ok", "variants": ["llamacpp:/etc/passwd"]}, 403, "model file '/etc/passwd' is outside"),
        ({"dataset": "ok", "variants": ["/etc/hosts"]}, 403, "variants file '/etc/hosts' is outside"),
    ],
)
def test_paths_outside_the_roots_are_refused_before_any_read(
    client: TestClient, body: dict[str, object], status: int, message: str
) -> None:
    answer = client.post("/runs", json=body)
    assert answer.status_code == status
    assert message in answer.json()["detail"]
    assert client.get("/runs").json() == []


@pytest.mark.parametrize(
    ("body", "field"),
    [({"limit": 0}, "limit"), ({"datasets": "ok"}, "datasets"), ({"embeddings": "maybe"}, "embeddings"),
     ({"gates": {"max_accuracy_drop": 2}}, "max_accuracy_drop"), ({"gates": {"max_drop": 0.1}}, "max_drop"),
     ({"variants": []}, "variants")],
)  # fmt: skip
def test_a_bad_body_gets_422_naming_the_field(
    client: TestClient, body: dict[str, object], field: str
) -> None:
    answer = client.post("/runs", json=body)
    assert answer.status_code == 422
    assert field in answer.text


def test_unknown_runs_and_missing_files_are_404(client: TestClient) -> None:
    assert client.get("/runs/nope").status_code == 404
    assert client.post("/runs/nope/cancel").status_code == 404
    assert client.get("/runs/nope/decision").status_code == 404
    failing = client.post("/runs", json={"dataset": "fails"}).json()
    until(client, failing["id"], "failed")
    answer = client.get(f"/runs/{failing['id']}/decision")
    assert answer.status_code == 404
    assert "has no decision.json yet" in answer.json()["detail"]


def test_a_bundled_dataset_goes_by_its_directory_and_variants_by_a_file_in_the_job(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "invoices").symlink_to("/etc")  # a directory named like a bundled set where the server runs
    monkeypatch.chdir(tmp_path)
    request = RunRequest(
        dataset="invoices",
        variants=["ollama:gemma3:270m"],
        token_fidelity=False,
        report=False,
        embeddings=True,
    )
    arguments = run_arguments(request, [root], tmp_path / "job")
    assert arguments == [
        "--dataset",
        str(bundled_root() / "invoices"),
        "--variants",
        str(tmp_path / "job" / "variants.toml"),
        "--no-token-fidelity",
        "--no-report",
        "--embeddings",
    ]
    written = load_variants_file(tmp_path / "job" / "variants.toml").variants
    assert [(v.name, v.backend, v.model) for v in written] == [("gemma3:270m", "ollama", "gemma3:270m")]


def test_the_bearer_scheme_is_case_insensitive(client: TestClient) -> None:
    for scheme in ("bearer", "BEARER", "Bearer", "bEaReR"):
        assert client.get("/health", headers={"Authorization": f"{scheme} {TOKEN}"}).status_code == 200
    for wrong in (f"Basic {TOKEN}", f"Bearer{TOKEN}", TOKEN, f"bearer {TOKEN}x", "bearer"):
        assert client.get("/health", headers={"Authorization": wrong}).status_code == 401


def test_without_a_token_no_header_is_needed(root: Path, tmp_path: Path) -> None:
    app = create_app(roots=[root], out=tmp_path / "runs", queue=JobQueue(tmp_path / "runs", command=FAKE))
    with TestClient(app, base_url=LOCAL) as plain:
        assert plain.get("/health").status_code == 200
