"""What the API tests share: the stand-in for `quantgate` (fake_quantgate.py), the token, and
waiting for a run to reach a status."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

FAKE = (sys.executable, str(Path(__file__).with_name("fake_quantgate.py")))
TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1"
"""The base URL of the test clients: a Host the server answers to (the default `testserver` is not)."""


def until(client: TestClient, job_id: str, *statuses: str, timeout_s: float = 20) -> dict[str, Any]:
    """The run's state once its status is one of `statuses`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = client.get(f"/runs/{job_id}").json()
        if state["status"] in statuses:
            return dict(state)
        time.sleep(0.05)
    raise AssertionError(f"run {job_id} never reached {statuses}: {state}")


def until_started(client: TestClient, job_id: str, timeout_s: float = 20) -> None:
    """Wait until the run's process has written its summary (its SIGTERM handler is in place)."""
    deadline = time.monotonic() + timeout_s
    while client.get(f"/runs/{job_id}").json()["progress"]["run_status"] != "running":
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)
