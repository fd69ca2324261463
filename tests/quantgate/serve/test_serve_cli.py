"""`quantgate serve` as a process: it binds, answers, and refuses an open bind without a token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from quantgate.cli.main import main


def test_binding_beyond_localhost_needs_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("QUANTGATE_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--host 0.0.0.0 reaches beyond this machine: set QUANTGATE_TOKEN" in capsys.readouterr().err


def test_a_root_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--root", str(tmp_path / "missing")]) == 2
    assert f"--root {tmp_path / 'missing'}: not a directory" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_server_answers_with_its_token_and_refuses_without(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "QUANTGATE_TOKEN": "t0ken"}
    command = [
        sys.executable,
        "-m",
        "quantgate",
        "serve",
        "--port",
        str(port),
        "--root",
        str(tmp_path),
        "--out",
        str(tmp_path / "runs"),
    ]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert "quantgate serve on http://127.0.0.1:" in server.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):  # uvicorn binds just after the banner
            try:
                answer = httpx.get(f"{url}/health", headers={"Authorization": "Bearer t0ken"})
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert answer.json()["status"] == "ok"
        assert httpx.get(f"{url}/health").status_code == 401
        refused = httpx.post(
            f"{url}/runs", json={"dataset": "/etc"}, headers={"Authorization": "Bearer t0ken"}
        )
        assert refused.status_code == 403
    finally:
        server.terminate()
        server.wait(timeout=30)
