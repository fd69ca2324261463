"""`quantgate serve` as a process: it binds, answers, and refuses an open bind without a token."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from quantgate.cli._main import main
from tests.quantgate.serve.server_process import running_server


def test_binding_beyond_localhost_needs_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("QUANTGATE_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--host 0.0.0.0 reaches beyond this machine: set QUANTGATE_TOKEN" in capsys.readouterr().err


def test_a_root_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--root", str(tmp_path / "missing")]) == 2
    assert f"--root {tmp_path / 'missing'}: not a directory" in capsys.readouterr().err


def test_the_server_answers_with_its_token_and_refuses_without(tmp_path: Path) -> None:
    with running_server([tmp_path], tmp_path / "runs", token="t0ken") as url:
        answer = httpx.get(f"{url}/health", headers={"Authorization": "Bearer t0ken"})
        assert answer.json()["status"] == "ok"
        assert httpx.get(f"{url}/health").status_code == 401
        refused = httpx.post(
            f"{url}/runs", json={"dataset": "/etc"}, headers={"Authorization": "Bearer t0ken"}
        )
        assert refused.status_code == 403


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_the_run_timeout_must_be_seconds_above_0(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--root", str(tmp_path), "--out", str(tmp_path / "runs"), "--run-timeout", value]
    assert main(["serve", *flags]) == 2
    assert f"--run-timeout {float(value):g}: give a number of seconds above 0" in capsys.readouterr().err


def test_a_second_server_on_the_same_out_refuses_to_start_naming_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_server([tmp_path], tmp_path / "runs"):
        pid = (tmp_path / "runs" / "serve.lock").read_text()
        assert main(["serve", "--root", str(tmp_path), "--out", str(tmp_path / "runs")]) == 2
        assert f"already used by another quantgate serve (pid {pid})" in capsys.readouterr().err


def test_the_server_answers_only_to_known_host_names(tmp_path: Path) -> None:
    with running_server([tmp_path], tmp_path / "runs", flags=["--allow-host", "box.lan"]) as url:
        hosts = ("attacker.example", "localhost", "box.lan:8321", "127.0.0.1")
        assert [httpx.get(f"{url}/health", headers={"Host": host}).status_code for host in hosts] == [
            400, 200, 200, 200
        ]  # fmt: skip


def test_the_api_token_cannot_be_allowed_to_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--root", str(tmp_path), "--out", str(tmp_path / "runs"), "--allow-env", "QUANTGATE_TOKEN"]
    assert main(["serve", *flags]) == 2
    assert "QUANTGATE_TOKEN is the API's token, which no run may read" in capsys.readouterr().err
