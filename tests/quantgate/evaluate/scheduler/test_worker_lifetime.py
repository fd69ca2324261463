"""A worker never outlives the process that started it, in real processes.

An interrupted `run_in_worker` ends its worker, killing one that ignores SIGTERM. When the parent
dies, a small driver process here, the worker goes too. The kill -9 of a whole `quantgate run`
is `test_evaluation_run_signals.py`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from quantgate.evaluate.scheduler import _worker as worker
from tests.quantgate.evaluate.processes import running, session, wait_for, wait_gone

STARTUP_S = 90.0
"""Until a child has imported quantgate, on a busy machine."""
GONE_S = 5.0

DRIVER = """
import multiprocessing, os, sys, time
from pathlib import Path
from quantgate.evaluate.scheduler import _worker as worker
from tests.quantgate.evaluate.scheduler.test_worker_lifetime import append_lines, watched_append_lines

how, lines, pid_file = sys.argv[1:]
spawn = multiprocessing.get_context("spawn")
if how == "worker-then-exit":
    receiver, sender = spawn.Pipe(duplex=False)
    child = spawn.Process(target=worker._worker_main, args=(sender, append_lines, lines))
else:
    child = spawn.Process(target=watched_append_lines, args=(lines,))
child.start()
Path(pid_file).write_text(str(child.pid))
if how == "worker-then-exit":
    os._exit(0)  # before the worker has even imported its job
time.sleep(120)
"""
"""Starts a child (argv: how, its lines file, its pid file), then exits or waits to be killed."""


def append_lines(path: str) -> None:
    """A job that never ends: a line every 50 ms."""
    with open(path, "a") as lines:
        while True:
            lines.write("line\n")
            lines.flush()
            time.sleep(0.05)


def watched_append_lines(path: str) -> None:
    """`append_lines` in a child that watches its parent as on platforms without prctl (it sets none)."""
    parent = multiprocessing.parent_process()
    assert parent is not None
    threading.Thread(target=worker._watch_parent, args=(parent,), daemon=True).start()
    append_lines(path)


def ignore_sigterm(pid_file: str) -> None:
    """A job stuck where SIGTERM does not end it; it writes its pid once it is."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(120)


def _child(pid_file: Path) -> list[psutil.Process]:
    """The process whose pid `pid_file` holds, if it is still there."""
    try:
        return [psutil.Process(int(pid_file.read_text()))]
    except psutil.NoSuchProcess:
        return []


def _interrupt_main_thread_once(pid_file: Path, sent: list[float]) -> None:
    """Ctrl-C to the main thread (blocked reading the worker's pipe) once the job has started."""
    wait_for(pid_file.exists, timeout=STARTUP_S, what="start of the job")
    main_thread = threading.main_thread().ident
    assert main_thread is not None
    sent.append(time.monotonic())
    signal.pthread_kill(main_thread, signal.SIGINT)


def test_an_interrupted_run_in_worker_kills_a_worker_that_ignores_sigterm(monkeypatch, tmp_path):
    monkeypatch.setattr(worker, "_TERMINATE_GRACE_S", 0.5)
    pid_file, sent = tmp_path / "pid", list[float]()
    interrupter = threading.Thread(target=_interrupt_main_thread_once, args=(pid_file, sent), daemon=True)
    interrupter.start()
    with pytest.raises(KeyboardInterrupt):
        worker.run_in_worker(ignore_sigterm, str(pid_file), name="test-stuck")
    assert time.monotonic() - sent[0] < GONE_S  # the grace, not the job's two minutes
    interrupter.join()
    assert not running(_child(pid_file))  # killed, and reaped


def test_a_worker_whose_parent_died_before_prctl_ends_without_running_its_job(sessions, tmp_path):
    lines, pid_file = tmp_path / "lines.txt", tmp_path / "pid"
    command = [sys.executable, "-c", DRIVER, "worker-then-exit", str(lines), str(pid_file)]
    driver = sessions.enter_context(session(command, stderr=tmp_path / "stderr.txt"))
    assert driver.wait(timeout=STARTUP_S) == 0
    child = _child(pid_file)
    wait_gone(child, driver.pid, timeout=STARTUP_S, what="the orphaned worker")
    assert not lines.exists()  # it ended before its job began
    assert "leaked" not in (tmp_path / "stderr.txt").read_text()


def test_where_prctl_is_not_available_a_thread_watches_the_parent(sessions, tmp_path):
    lines, pid_file = tmp_path / "lines.txt", tmp_path / "pid"
    command = [sys.executable, "-c", DRIVER, "watched", str(lines), str(pid_file)]
    driver = sessions.enter_context(session(command, stderr=tmp_path / "stderr.txt"))
    wait_for(
        lambda: lines.exists() and lines.stat().st_size > 0, timeout=STARTUP_S, what="line from the child"
    )
    child = _child(pid_file)
    assert running(child)
    os.kill(driver.pid, signal.SIGKILL)
    wait_gone(child, driver.pid, timeout=GONE_S, what="the watched child of a killed parent")
