"""Stopping runs (once, at a wall-clock limit, SIGKILL after a grace), a run that dies with its
server, and the runs a restarted server finds on disk."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quantgate.serve import JobQueue, JobStatus, RunRequest, RunState, create_app
from quantgate.serve._jobs import time_limit
from tests.quantgate.serve.api_client import AUTH, FAKE, LOCAL, TOKEN, until, until_started


def _sigterms(tmp_path: Path, job_id: str) -> int:
    path = tmp_path / "runs" / job_id / "sigterms"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_second_cancel_sends_no_second_sigterm(client: TestClient, tmp_path: Path) -> None:
    job = client.post("/runs", json={"dataset": "stubborn"}).json()
    until_started(client, job["id"])
    client.post(f"/runs/{job['id']}/cancel")
    client.post(f"/runs/{job['id']}/cancel")
    deadline = time.monotonic() + 10
    while _sigterms(tmp_path, job["id"]) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert _sigterms(tmp_path, job["id"]) == 1
    state = until(client, job["id"], "cancelled", "failed")  # the stand-in ignores SIGTERM: killed
    assert (state["status"], state["error"]) == (
        "cancelled",
        "cancelled on request (killed 1 s after SIGTERM)",
    )
    assert _sigterms(tmp_path, job["id"]) == 1


def test_a_run_past_its_wall_clock_limit_is_stopped_as_by_cancel(client: TestClient) -> None:
    job = client.post("/runs", json={"dataset": "slow", "timeout_s": 3}).json()  # time to start
    state = until(client, job["id"], "failed", "complete", "cancelled")
    assert (state["status"], state["error"], state["time_limit_s"]) == (
        "failed", "stopped after 3 s wall-clock limit", 3
    )  # fmt: skip
    assert state["progress"]["run_status"] == "interrupted"


def test_the_servers_limit_holds_whatever_the_request_asks(root: Path, tmp_path: Path) -> None:
    assert (time_limit(None, None), time_limit(5, None), time_limit(None, 7), time_limit(9, 7)) == (
        None,
        5,
        7,
        7,
    )
    queue = JobQueue(tmp_path / "runs", command=FAKE, run_timeout_s=2, stop_grace_s=1.0)
    with TestClient(create_app(roots=[root], out=tmp_path / "runs", queue=queue), base_url=LOCAL) as plain:
        job = plain.post("/runs", json={"dataset": "stubborn", "timeout_s": 3600}).json()
        state = until(plain, job["id"], "failed", "complete")
        assert state["error"] == "stopped after 2 s wall-clock limit (killed 1 s after SIGTERM)"


def _job_file(out: Path, job_id: str, status: JobStatus, run_status: str | None = None) -> Path:
    """A job directory as a dead server left it: its job.json and, given `run_status`, a run directory."""
    state = RunState(
        id=job_id, status=status, request=RunRequest(dataset="ok"), created_at="2026-12-03T10:00"
    )
    job_dir = out / job_id
    job_dir.mkdir(parents=True)
    (job_dir / "job.json").write_text(state.model_dump_json())
    if run_status is not None:
        (job_dir / "20261203-100000-aaaaaa").mkdir()
        (job_dir / "20261203-100000-aaaaaa" / "summary.json").write_text(f'{{"status": "{run_status}"}}')
    return job_dir


def test_a_restarted_server_lists_the_runs_of_the_last_one(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    _job_file(out, "20261203-100000-000001", "complete")
    _job_file(out, "20261203-100000-000002", "running", run_status="interrupted")
    _job_file(out, "20261203-100000-000003", "queued")
    (out / "not-a-job").mkdir()
    queue = JobQueue(out, command=FAKE)
    with TestClient(create_app(roots=[root], out=out, queue=queue), base_url=LOCAL) as plain:
        states = plain.get("/runs").json()
    assert [(s["id"][-1], s["status"], s["error"]) for s in states] == [
        ("1", "complete", None),
        ("2", "failed", "the server stopped while it ran; its run directory says interrupted"),
        ("3", "failed", "not started: the server stopped first"),
    ]
    assert (
        RunState.model_validate_json((out / "20261203-100000-000003" / "job.json").read_text()).status
        == "failed"
    )


def test_no_run_starts_beside_one_a_dead_server_left_running(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    run_dir = (
        _job_file(out, "20261203-100000-000001", "running", run_status="running") / "20261203-100000-aaaaaa"
    )
    lock = os.open(run_dir, os.O_RDONLY)  # as the orphaned `quantgate run` holds it
    fcntl.flock(lock, fcntl.LOCK_EX)
    queue = JobQueue(out, command=FAKE)
    with TestClient(
        create_app(roots=[root], out=out, token=TOKEN, queue=queue), headers=AUTH, base_url=LOCAL
    ) as client:
        assert client.get("/health").json()["running"] == 1
        assert client.post("/runs/20261203-100000-000001/cancel").status_code == 409
        job = client.post("/runs", json={"dataset": "ok"}).json()
        time.sleep(1.2)
        assert client.get(f"/runs/{job['id']}").json()["status"] == "queued"
        (run_dir / "summary.json").write_text('{"status": "complete"}')
        (run_dir / "decision.json").write_text('{"outcome": "keep_reference"}')
        os.close(lock)  # the orphan ends
        assert until(client, job["id"], "complete")["status"] == "complete"
        adopted = client.get("/runs/20261203-100000-000001").json()
        assert (adopted["status"], adopted["outcome"]) == ("complete", "keep_reference")


_SERVER = """
import sys, time
from pathlib import Path
from quantgate.serve import JobQueue, RunRequest
out, dataset = Path(sys.argv[1]), sys.argv[2]
queue = JobQueue(out, command=sys.argv[3:])
queue.submit("20261203-100000-000001", RunRequest(dataset="slow"), ["--dataset", dataset])
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_a_run_dies_with_its_server_even_by_kill_9(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    server = subprocess.Popen([sys.executable, "-c", _SERVER, str(out), str(root / "slow"), *FAKE])
    pid_file = out / "20261203-100000-000001" / "pid"
    summary = out / "20261203-100000-000001" / "20260101-000000-abcdef" / "summary.json"
    deadline = time.monotonic() + 20
    while not (summary.exists() and pid_file.exists()):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)
    server.send_signal(signal.SIGKILL)
    server.wait()
    while '"interrupted"' not in summary.read_text():  # SIGTERM from the kernel: it stops as on Ctrl-C
        assert time.monotonic() < deadline + 10, "the run outlived its server"
        time.sleep(0.05)
    queue = JobQueue(out, command=FAKE)
    try:
        [state] = queue.states()
        while state.status == "running":  # until the run has exited and the queue's poll has seen it
            assert time.monotonic() < deadline + 20, "the queue never settled the run"
            time.sleep(0.05)
            [state] = queue.states()
        assert (state.status, state.error) == (
            "failed",
            "the server stopped while it ran; its run directory says interrupted",
        )
    finally:
        queue.close()
