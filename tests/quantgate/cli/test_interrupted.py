"""How `main` ends on a signal: one line on stderr, 130 after SIGINT, 143 after SIGTERM."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import quantgate.cli._datasets
from quantgate.cli import main
from quantgate.evaluate._signals import Interrupted


def _unhandled(signum: int, frame: object) -> None:
    raise RuntimeError(f"{signal.Signals(signum).name} reached the handler set before main")


def test_sigterm_during_a_command_exits_143(monkeypatch, capsys):
    def terminated() -> list[str]:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # the handler raises in here
            time.sleep(0.05)
        return []

    monkeypatch.setattr(quantgate.cli._datasets, "bundled_datasets", terminated)
    before = signal.signal(signal.SIGTERM, _unhandled)  # without main's handler: exit status 1
    try:
        assert main(["datasets", "list"]) == 143
        assert signal.getsignal(signal.SIGTERM) is _unhandled  # main put it back
    finally:
        signal.signal(signal.SIGTERM, before)
    assert capsys.readouterr().err == "quantgate: interrupted by SIGTERM\n"


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_an_interrupted_run_names_its_run_directory(monkeypatch, capsys, signum, status):
    def interrupted() -> list[str]:
        interruption = Interrupted(signum)
        interruption.run_dir = Path("runs/20260101-000000-abcdef")
        raise interruption

    monkeypatch.setattr(quantgate.cli._datasets, "bundled_datasets", interrupted)
    assert main(["datasets", "list"]) == status
    name = signal.Signals(signum).name
    run = "runs/20260101-000000-abcdef"
    where = f"the run so far is in {run} (go on with: quantgate run --resume {run})"
    expected = f"quantgate: interrupted by {name}; {where}\n"
    assert capsys.readouterr().err == expected
