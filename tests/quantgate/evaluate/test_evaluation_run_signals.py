"""`quantgate run` stopped by a signal, in real processes: nothing outlives it, SIGTERM is Ctrl-C.

Each test starts the real command line (with the `slow` fake backend of `slow_backend.py`,
evaluated in a spawned worker as an embedded variant is) in a process group of its own, waits
until the worker has written records, and signals the main process only, as `kill`, systemd's
main-process mode and Kubernetes do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psutil

from quantgate.rundir._files import RECORDS_FILE
from quantgate.rundir._store import load_run, read_records
from tests.quantgate.evaluate.processes import ROOT, describe, session, wait_for, wait_gone
from tests.quantgate.evaluate.slow_backend import write_inputs

STARTUP_S = 90.0
"""Until the worker's first record: two Python processes importing quantgate, on a busy machine."""
GONE_S = 5.0
"""How soon every process of the run must be gone once it is stopped."""


@dataclass(frozen=True, kw_only=True)
class Run:
    process: subprocess.Popen[bytes]
    out: Path
    stderr: Path

    @property
    def run_dir(self) -> Path:
        (run_dir,) = self.out.iterdir()
        return run_dir

    def records(self) -> int:
        """Lines in records.jsonl so far."""
        paths = list(self.out.glob(f"*/{RECORDS_FILE}"))
        return len(paths[0].read_bytes().splitlines()) if paths else 0

    def helpers(self) -> list[psutil.Process]:
        """The worker and multiprocessing's resource tracker, once both have started."""
        wait_for(lambda: self.records() > 0, timeout=STARTUP_S, what="record from the worker")
        children = psutil.Process(self.process.pid).children(recursive=True)
        commands = " ".join(" ".join(c.cmdline()) for c in children)
        assert "spawn_main" in commands, describe(children)
        assert "resource_tracker" in commands, describe(children)
        return children

    def assert_nothing_left(self, children: list[psutil.Process]) -> None:
        """No child of the run, and no process of its group, runs `GONE_S` after it ended."""
        wait_gone(children, self.process.pid, timeout=GONE_S, what="the stopped run's processes")
        assert "leaked" not in self.stderr.read_text(), self.stderr.read_text()


QUANTGATE = [sys.executable, "-m", "tests.quantgate.evaluate.slow_backend"]
"""The command line, with the `slow` backend registered."""


def start_run(
    sessions: ExitStack, root: Path, *, cases: int = 400, sigterm_marker: Path | None = None
) -> Run:
    """Start `quantgate run` on `cases` slow cases (0.05 s each at least), its files under `root`.

    Args:
        sessions: The test's `sessions`.
        root: Where the inputs, the runs and the run's stderr go.
        cases: How many.
        sigterm_marker: Have the worker ignore SIGTERM, touching this file instead.
    """
    dataset, variants = write_inputs(root, cases=cases, delay_s=0.05, sigterm_marker=sigterm_marker)
    out, stderr = root / "runs", root / "stderr.txt"
    command = [*QUANTGATE, "run", "--all", "--json",
               "--dataset", str(dataset), "--variants", str(variants), "--out", str(out), "--no-report",
               "--no-token-fidelity"]  # fmt: skip
    return Run(process=sessions.enter_context(session(command, stderr=stderr)), out=out, stderr=stderr)


def test_kill_9_of_the_run_takes_the_worker_and_the_resource_tracker_with_it(sessions, tmp_path):
    run = start_run(sessions, tmp_path)
    children = run.helpers()
    os.kill(run.process.pid, signal.SIGKILL)
    assert run.process.wait(timeout=GONE_S) == -signal.SIGKILL
    run.assert_nothing_left(children)
    written = run.records()
    time.sleep(0.5)  # ten cases' time: a worker still going would have written more
    assert run.records() == written


def test_a_run_killed_by_kill_9_goes_on_with_resume_recording_each_case_once(sessions, tmp_path):
    run = start_run(sessions, tmp_path, cases=120)
    children = run.helpers()
    wait_for(lambda: run.records() >= 20, timeout=STARTUP_S, what="20 records")
    os.kill(run.process.pid, signal.SIGKILL)
    run.process.wait(timeout=GONE_S)
    run.assert_nothing_left(children)
    run_dir = run.run_dir
    before = (run_dir / RECORDS_FILE).read_bytes()
    decided = subprocess.run([*QUANTGATE, "decide", str(run_dir)], cwd=ROOT, capture_output=True, text=True)
    assert decided.returncode == 5, decided.stderr  # an incomplete run
    assert f"go on with: quantgate run --resume {run_dir}" in decided.stdout + decided.stderr

    resumed = subprocess.run(
        [*QUANTGATE, "run", "--resume", str(run_dir), "--json", "--no-report"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 4, resumed.stderr  # the reference alone: keep it
    assert "Traceback" not in resumed.stderr
    assert (run_dir / RECORDS_FILE).read_bytes().startswith(before.rpartition(b"\n")[0])
    counts = Counter(r.case_id for r in read_records(run_dir))
    assert counts == Counter({f"c{i}": 1 for i in range(120)})
    run_info = load_run(run_dir)
    assert run_info.summary.status == "complete"
    (entry,) = run_info.summary.variants
    assert entry.complete
    assert entry.resumed_cases is not None
    assert entry.resumed_cases >= 20


def test_sigterm_ends_the_run_as_interrupted_with_status_143(sessions, tmp_path):
    run = start_run(sessions, tmp_path)
    children = run.helpers()
    run.process.send_signal(signal.SIGTERM)
    assert run.process.wait(timeout=GONE_S) == 128 + signal.SIGTERM
    run.assert_nothing_left(children)
    summary = load_run(run.run_dir).summary
    assert summary.status == "interrupted"
    stderr = run.stderr.read_text()
    where = f"the run so far is in {run.run_dir} (go on with: quantgate run --resume {run.run_dir})"
    assert f"quantgate: interrupted by SIGTERM; {where}\n" in stderr
    assert "Traceback" not in stderr


def test_a_second_signal_while_stopping_exits_at_once(sessions, tmp_path):
    marker = tmp_path / "worker-got-sigterm"
    run = start_run(sessions, tmp_path, sigterm_marker=marker)
    children = run.helpers()
    run.process.send_signal(signal.SIGTERM)
    wait_for(marker.exists, timeout=GONE_S, what="SIGTERM sent to the worker")  # now stopping
    started = time.monotonic()
    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(timeout=GONE_S) == 128 + signal.SIGINT
    assert time.monotonic() - started < 2.0  # not the grace a stuck worker gets before SIGKILL
    assert "quantgate: SIGINT while stopping: exiting at once" in run.stderr.read_text()
    run.assert_nothing_left(children)  # the worker that ignores SIGTERM too
    assert load_run(run.run_dir).summary.status == "interrupted"  # written before the fast exit


def test_two_sigterms_as_gnu_timeout_sends_them_leave_the_run_interrupted(sessions, tmp_path):
    """`timeout` signals the run, then its whole group: quantgate gets a second SIGTERM while it
    stops (or both at once, as one); either way summary.json says `interrupted`."""
    run = start_run(sessions, tmp_path)
    children = run.helpers()
    run.process.send_signal(signal.SIGTERM)
    os.killpg(run.process.pid, signal.SIGTERM)  # the run's group: the run again, and its worker
    assert run.process.wait(timeout=GONE_S) == 128 + signal.SIGTERM
    run.assert_nothing_left(children)
    assert load_run(run.run_dir).summary.status == "interrupted"
    assert "Traceback" not in run.stderr.read_text()
