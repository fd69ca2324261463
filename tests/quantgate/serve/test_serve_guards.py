"""What the server keeps to itself and whom it answers: a run's environment (an allow-list, the
API token never in it), the Host header (loopback names and the addresses bound, DNS rebinding),
one server per `--out`, strict types in the request, and a dataset path that is a file."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from evaluators.errors import UsageError
from quantgate.serve import JobQueue, RunRequest, create_app
from quantgate.serve._environment import run_environment
from tests.quantgate.serve.api_client import FAKE, LOCAL

_DUMP_ENV = (
    sys.executable,
    "-c",
    "import json, os, sys; out = sys.argv[sys.argv.index('--out') + 1]; "
    "os.makedirs(out, exist_ok=True); open(out + '/env.json', 'w').write(json.dumps(dict(os.environ)))",
)


def test_a_run_gets_only_the_allowed_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SECRET", "s3cret")
    monkeypatch.setenv("QUANTGATE_TOKEN", "the-api-token")
    monkeypatch.setenv("ALLOWED_KEY", "k3y")
    queue = JobQueue(tmp_path / "runs", command=_DUMP_ENV, allow_env=["ALLOWED_KEY"])
    try:
        queue.submit("20261203-100000-000001", RunRequest(dataset="ok"), ["--dataset", "ok"])
        dumped = tmp_path / "runs" / "20261203-100000-000001" / "env.json"
        deadline = time.monotonic() + 20
        while not dumped.exists() or not dumped.read_text():
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        time.sleep(0.1)
        environment = json.loads(dumped.read_text())
    finally:
        queue.close()
    assert ("FAKE_SECRET" in environment, "QUANTGATE_TOKEN" in environment) == (False, False)
    assert (environment["ALLOWED_KEY"], environment["PATH"]) == ("k3y", os.environ["PATH"])


def test_the_api_token_is_never_in_a_runs_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTGATE_TOKEN", "the-api-token")
    assert "QUANTGATE_TOKEN" not in run_environment(["QUANTGATE_TOKEN"])
    with pytest.raises(UsageError, match="QUANTGATE_TOKEN is the API's token"):
        JobQueue(Path("unused"), allow_env=["QUANTGATE_TOKEN"])


@pytest.mark.parametrize(
    ("host", "allowed", "status"),
    [
        ("attacker.example", (), 400),
        ("attacker.example:8321", (), 400),
        ("localhost:8321", (), 200),
        ("LOCALHOST.", (), 200),
        ("127.0.0.1:8321", (), 200),
        ("127.1.2.3", (), 200),
        ("[::1]:8321", (), 200),
        ("10.0.0.5:8321", (), 400),
        ("10.0.0.5:8321", ("10.0.0.5",), 200),
        ("box.lan:8321", ("box.lan",), 200),
        ("Box.LAN", ("box.lan",), 200),
        ("other.lan", ("box.lan",), 400),
        ("10.0.0.5", ("0.0.0.0",), 200),
        ("box.lan", ("0.0.0.0",), 400),
        ("", (), 400),
        ("[::1]evil.example", (), 400),
        ("[::1]:8321:evil", (), 400),
    ],
)
def test_only_known_hosts_are_answered(
    root: Path, tmp_path: Path, host: str, allowed: tuple[str, ...], status: int
) -> None:
    queue = JobQueue(tmp_path / "runs", command=FAKE)
    app = create_app(roots=[root], out=tmp_path / "runs", queue=queue, hosts=allowed)
    with TestClient(app, base_url=LOCAL) as plain:
        answers = [plain.get(path, headers={"Host": host}) for path in ("/health", "/runs", "/docs")]
    assert [answer.status_code for answer in answers] == [status] * 3
    if status == 400:
        assert "--allow-host" in answers[0].json()["detail"]


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://attacker.example", 403),
        ("https://127.0.0.1.attacker.example:8321", 403),
        ("null", 403),
        ("file://", 403),
        ("http://127.0.0.1:8321", 200),
        ("http://localhost:8321", 200),
        (None, 200),
    ],
)
def test_a_token_less_server_refuses_requests_from_other_sites_pages(
    root: Path, tmp_path: Path, origin: str | None, status: int
) -> None:
    """A page on any site could cancel a run of a token-less server: its browser sends the POST to
    127.0.0.1 with `Host: 127.0.0.1` (no DNS rebinding needed) and `Origin` naming the page's site,
    which went unchecked (issue 46's second review). Such a request is refused before it acts."""
    queue = JobQueue(tmp_path / "runs", command=FAKE)
    app = create_app(roots=[root], out=tmp_path / "runs", queue=queue)
    headers = {"Origin": origin} if origin is not None else {}
    with TestClient(app, base_url=LOCAL) as plain:
        job_id = plain.post("/runs", json={"dataset": "slow"}).json()["id"]
        answers = [
            plain.post(f"/runs/{job_id}/cancel", headers=headers),
            plain.post("/runs", json={"dataset": "ok"}, headers=headers),
            plain.get("/runs", headers=headers),
        ]
        assert [answer.status_code for answer in answers] == [status, 202 if status == 200 else 403, status]
        state = plain.get(f"/runs/{job_id}").json()["status"]
    if status == 403:
        assert "Origin" in answers[0].json()["detail"]
        assert state in ("queued", "running")
    else:
        assert state == "cancelled"


def test_a_second_server_on_one_out_refuses_to_start(root: Path, tmp_path: Path) -> None:
    first = JobQueue(tmp_path / "runs", command=FAKE)
    try:
        first.submit("20261203-100000-000001", RunRequest(dataset="slow"), ["--dataset", str(root / "slow")])
        first.submit("20261203-100000-000002", RunRequest(dataset="ok"), ["--dataset", str(root / "ok")])
        with pytest.raises(
            UsageError, match=f"already used by another quantgate serve \\(pid {os.getpid()}\\)"
        ):
            JobQueue(tmp_path / "runs", command=FAKE)
        assert first.state("20261203-100000-000002").status == "queued"  # type: ignore[union-attr]
        job_file = tmp_path / "runs" / "20261203-100000-000002" / "job.json"
        assert json.loads(job_file.read_text())["status"] == "queued"
    finally:
        first.close()
    JobQueue(tmp_path / "runs", command=FAKE).close()  # free again once the first has closed


@pytest.mark.parametrize(
    "body", [{"limit": "3"}, {"limit": True}, {"limit": 3.0}, {"token_fidelity": "yes"}, {"report": 1}]
)
def test_numbers_and_flags_are_strictly_typed(client: TestClient, body: dict[str, object]) -> None:
    answer = client.post("/runs", json={"dataset": "ok", **body})
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == ["body", next(iter(body))]


def test_a_dataset_that_is_a_file_is_refused_at_request_time(client: TestClient, root: Path) -> None:
    (root / "cases.jsonl").write_text("{}\n")
    answer = client.post("/runs", json={"dataset": "cases.jsonl"})
    assert (answer.status_code, answer.json()["detail"]) == (
        422,
        "dataset 'cases.jsonl' is not a directory (give a dataset's directory or a bundled name)",
    )
    assert client.get("/runs").json() == []
