"""The server's runs: a queue worked through one at a time, each run a `quantgate run` process.

Each request becomes a job with its own directory, `OUT/<job-id>/`, holding the run
directory `quantgate run` writes there, the job's gates file and the process's output
(`stdout.log`, `stderr.log`). A run is a child process, so the server survives whatever
the run does (a crash, a model that cannot load), and cancelling a running job sends it
SIGTERM, which `quantgate run` handles as Ctrl-C: the run directory says `interrupted`.
The jobs live in memory: a restarted server lists none (their directories stay).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import secrets
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quantgate.rundir.decision import EXIT_STATUS
from quantgate.rundir.files import DECISION_JSON, RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE
from quantgate.serve.requests import RunProgress, RunRequest, RunState

CLI = (sys.executable, "-m", "quantgate")
"""How a job runs quantgate: this interpreter, the package's command line."""
DECIDED = {status for reason, status in EXIT_STATUS.items() if reason != "incomplete_run"}
"""`quantgate run`'s statuses for a run that ended and was decided (0, 3, 4)."""
_STOP_WAIT_S = 60.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass(eq=False)
class _Job:
    state: RunState
    directory: Path
    arguments: list[str]
    process: subprocess.Popen[bytes] | None = None
    cancelled: bool = False


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


class JobQueue:
    """Runs queued jobs one at a time on a worker thread; thread-safe."""

    def __init__(self, out: Path, *, command: Sequence[str] = CLI) -> None:
        self.out = out
        self.command = list(command)
        self._jobs: dict[str, _Job] = {}
        self._waiting: deque[_Job] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="quantgate-serve-runs", daemon=True)
        self._thread.start()

    def job_directory(self, job_id: str) -> Path:
        """Where a job's files go."""
        return self.out / job_id

    @staticmethod
    def new_id() -> str:
        """A sortable, unique job id."""
        return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)

    def submit(self, job_id: str, request: RunRequest, arguments: list[str]) -> RunState:
        """Queue `quantgate run ARGUMENTS` as job `job_id` (its directory made by the caller)."""
        job = _Job(
            state=RunState(id=job_id, status="queued", request=request, created_at=_now()),
            directory=self.job_directory(job_id),
            arguments=arguments,
        )
        with self._wake:
            self._jobs[job_id] = job
            self._waiting.append(job)
            self._wake.notify()
        return job.state

    def states(self) -> list[RunState]:
        """Every job, oldest first, with its progress read now."""
        with self._wake:
            jobs = list(self._jobs.values())
        return [self._refreshed(job) for job in jobs]

    def state(self, job_id: str) -> RunState | None:
        """One job, with its progress read now; None when unknown."""
        job = self._jobs.get(job_id)
        return None if job is None else self._refreshed(job)

    def run_dir(self, job_id: str) -> Path | None:
        """The run directory `quantgate run` made for the job, once it exists."""
        job = self._jobs.get(job_id)
        if job is None or not job.directory.is_dir():
            return None
        return next((p for p in sorted(job.directory.iterdir()) if (p / SUMMARY_FILE).is_file()), None)

    def cancel(self, job_id: str) -> RunState | None:
        """Cancel a queued job, or stop a running one (SIGTERM: the run says `interrupted`)."""
        job = self._jobs.get(job_id)
        if job is None:
            return None
        with self._wake:
            if job.state.status == "queued":
                self._waiting.remove(job)
                job.state = job.state.model_copy(update={"status": "cancelled", "ended_at": _now()})
            elif job.state.status == "running" and job.process is not None:
                job.cancelled = True
                with contextlib.suppress(ProcessLookupError):
                    job.process.send_signal(signal.SIGTERM)
        return self._refreshed(job)

    def close(self) -> None:
        """Stop the worker; a running job is stopped as by `cancel`."""
        with self._wake:
            self._closed = True
            self._wake.notify()
            running = [j for j in self._jobs.values() if j.state.status == "running"]
        for job in running:
            self.cancel(job.state.id)
        self._thread.join(timeout=_STOP_WAIT_S)

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._closed and not self._waiting:
                    self._wake.wait()
                if self._closed:
                    return
                job = self._waiting.popleft()
                job.state = job.state.model_copy(update={"status": "running", "started_at": _now()})
                try:
                    job.process = self._start(job)
                except OSError as exc:
                    job.state = job.state.model_copy(
                        update={"status": "failed", "error": f"cannot start: {exc}"}
                    )
                    continue
            status = job.process.wait()
            self._ended(job, status)

    def _start(self, job: _Job) -> subprocess.Popen[bytes]:
        job.directory.mkdir(parents=True, exist_ok=True)
        with open(job.directory / "stdout.log", "wb") as out, open(job.directory / "stderr.log", "wb") as err:
            return subprocess.Popen(
                [*self.command, "run", *job.arguments, "--out", str(job.directory), "--json"],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )

    def _ended(self, job: _Job, status: int) -> None:
        run_dir = self.run_dir(job.state.id)
        decision = run_dir / DECISION_JSON if run_dir is not None else None
        outcome = None
        if decision is not None and decision.is_file():
            with contextlib.suppress(OSError, ValueError):
                outcome = json.loads(decision.read_text(encoding="utf-8")).get("outcome")
        update: dict[str, object] = {"exit_status": status, "ended_at": _now(), "outcome": outcome}
        if job.cancelled:
            update |= {"status": "cancelled", "error": "cancelled on request"}
        elif status in DECIDED and outcome is not None:
            update["status"] = "complete"
        else:
            why = _tail(job.directory / "stderr.log") or "no message"
            update |= {"status": "failed", "error": f"quantgate run exited with {status}: {why}"}
        with self._wake:
            job.state = job.state.model_copy(update=update)

    def _refreshed(self, job: _Job) -> RunState:
        run_dir = self.run_dir(job.state.id)
        if run_dir is None:
            return job.state
        progress = RunProgress(run_dir=str(run_dir))
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
            planned = json.loads((run_dir / VARIANTS_FILE).read_text(encoding="utf-8"))["variants"]
            with open(run_dir / RECORDS_FILE, "rb") as records:
                lines = sum(1 for _ in records)
            progress = RunProgress(
                run_dir=str(run_dir),
                run_status=summary["status"],
                variants_done=len(summary["variants"]),
                variants_total=len(planned),
                cases_recorded=lines,
            )
        return job.state.model_copy(update={"progress": progress})
