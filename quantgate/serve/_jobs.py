"""The server's runs: a queue worked through one at a time, each run a `quantgate run` process.

Each request becomes a job with its own directory, `OUT/<job-id>/`, holding its state
(`job.json`), the run directory `quantgate run` writes there, the job's gates and variants files
and the process's output (`stdout.log`, `stderr.log`). A run is a child process, so the server
survives whatever the run does (a crash, a model that cannot load). Stopping a running job
(cancel, its wall-clock limit, the server shutting down) sends it SIGTERM once, which
`quantgate run` handles as Ctrl-C (the run directory says `interrupted`), and SIGKILL if it has
not ended after a grace period. On Linux the run also gets SIGTERM when its server dies, even by
`kill -9`; a restarted server lists the jobs under `OUT` (`quantgate.serve._jobdirs`) and starts
no run while one its predecessor left still holds its run directory's lock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluators.errors import QuantgateError
from quantgate.rundir._decision import EXIT_STATUS
from quantgate.rundir._files import RECORDS_FILE, SUMMARY_FILE, VARIANTS_FILE
from quantgate.serve import _jobdirs as jobdirs
from quantgate.serve._environment import allowed_names, run_environment
from quantgate.serve._requests import JobStatus, RunProgress, RunRequest, RunState

CLI = (sys.executable, "-m", "quantgate")
"""How a job runs quantgate: this interpreter, the package's command line."""
DECIDED = {status for reason, status in EXIT_STATUS.items() if reason != "incomplete_run"}
"""`quantgate run`'s statuses for a run that ended and was decided (0, 3, 4)."""
MAX_QUEUED = 16
"""Jobs waiting at most; a request beyond gets 429."""
STOP_GRACE_S = 30.0
"""How long a stopped run may take to end after SIGTERM before it gets SIGKILL."""
_POLL_S = 0.5
_STOP_WAIT_S = 60.0
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0); "
    "os.getppid() == int(sys.argv[1]) or sys.exit(143); os.execvp(sys.argv[2], sys.argv[2:])"
)
"""Run a command with PR_SET_PDEATHSIG (1) set to SIGTERM, so it gets SIGTERM when the server's
thread that started it ends, even by kill -9 (prctl in a `preexec_fn` is not safe in a threaded
server; the setting survives exec). Ends at once if the server already ended."""
_STOPPED: dict[str, tuple[JobStatus, str]] = {
    "cancel": ("cancelled", "cancelled on request"),
    "close": ("cancelled", "stopped: the server shut down"),
}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class QueueFullError(QuantgateError, RuntimeError):
    """MAX_QUEUED jobs are already waiting."""


class NotOursError(QuantgateError, RuntimeError):
    """A run an earlier server started: this one has no process to stop."""


@dataclass(eq=False)
class _Job:
    state: RunState
    directory: Path
    arguments: list[str]
    process: subprocess.Popen[bytes] | None = None
    stop: str | None = None
    """Why it is being stopped: cancel, close or timeout (None: it is not)."""
    stop_at: float | None = None
    killed: bool = False
    adopted: bool = False
    """Running under an earlier server (its lock held), with no process of this one."""
    recheck: Callable[[], object] | None = None
    """The request's file checks, run again when the job starts."""


def time_limit(requested: float | None, server: float | None) -> float | None:
    """The wall-clock limit of a run: the lower of the request's and the server's."""
    limits = [limit for limit in (requested, server) if limit is not None]
    return min(limits) if limits else None


class JobQueue:
    """Runs queued jobs one at a time on a worker thread; thread-safe."""

    def __init__(
        self,
        out: Path,
        *,
        command: Sequence[str] = CLI,
        run_timeout_s: float | None = None,
        max_queued: int = MAX_QUEUED,
        stop_grace_s: float = STOP_GRACE_S,
        allow_env: Iterable[str] = (),
    ) -> None:
        """`allow_env`: variables a run gets besides `RUN_ENVIRONMENT` (`quantgate.serve._environment`).

        Raises:
            UsageError: `allow_env` names the token or no variable; another server uses `out`
                (`jobdirs.OutInUseError`).
        """
        self.allow_env = allowed_names(allow_env)
        self._lock = jobdirs.claim(out)  # before anything under `out` is read or rewritten
        self.out = out
        self.command = list(command)
        self.run_timeout_s = run_timeout_s
        self.max_queued = max_queued
        self.stop_grace_s = stop_grace_s
        self._jobs: dict[str, _Job] = {
            state.id: _Job(state, self.job_directory(state.id), [], adopted=held)
            for state, held in jobdirs.recovered_states(out)
        }
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

    def full(self) -> bool:
        """Whether MAX_QUEUED jobs are waiting."""
        with self._wake:
            return len(self._waiting) >= self.max_queued

    def submit(
        self,
        job_id: str,
        request: RunRequest,
        arguments: list[str],
        recheck: Callable[[], object] | None = None,
    ) -> RunState:
        """Queue `quantgate run ARGUMENTS` as job `job_id` (its directory made by the caller);
        `recheck` is called again just before the run starts, and the job fails if it raises.

        Raises:
            QueueFullError: MAX_QUEUED jobs are waiting.
        """
        limit = time_limit(request.timeout_s, self.run_timeout_s)
        state = RunState(id=job_id, status="queued", request=request, created_at=_now(), time_limit_s=limit)
        job = _Job(state=state, directory=self.job_directory(job_id), arguments=arguments, recheck=recheck)
        with self._wake:
            if len(self._waiting) >= self.max_queued:
                raise QueueFullError(f"{self.max_queued} runs are already waiting; try again later")
            self._jobs[job_id] = job
            self._waiting.append(job)
            jobdirs.save_state(job.directory, state)
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
        return None if job is None else jobdirs.run_directory(job.directory)

    def cancel(self, job_id: str) -> RunState | None:
        """Cancel a queued job, or stop a running one (SIGTERM once: the run says `interrupted`).

        Raises:
            NotOursError: The run was started by an earlier server.
        """
        job = self._jobs.get(job_id)
        if job is None:
            return None
        with self._wake:
            if job.adopted and job.state.status == "running":
                raise NotOursError(f"run {job_id!r} was started by an earlier server, which cannot stop it")
            if job.state.status == "queued":
                self._waiting.remove(job)
                self._update(job, status="cancelled", ended_at=_now(), error="cancelled on request")
            elif job.state.status == "running":
                self._stop(job, "cancel")
        return self._refreshed(job)

    def close(self) -> None:
        """Stop the worker; a running job is stopped as by `cancel`."""
        with self._wake:
            self._closed = True
            for job in self._jobs.values():
                if job.state.status == "running" and not job.adopted:
                    self._stop(job, "close")
            self._wake.notify()
        self._thread.join(timeout=_STOP_WAIT_S)
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

    def _update(self, job: _Job, **update: object) -> None:
        job.state = job.state.model_copy(update=update)
        jobdirs.save_state(job.directory, job.state)

    def _stop(self, job: _Job, why: str) -> None:
        """SIGTERM a running job, once: a second stop changes nothing (call with the lock held)."""
        if job.stop is not None:
            return
        job.stop, job.stop_at = why, time.monotonic()
        if job.process is not None:
            with contextlib.suppress(ProcessLookupError):
                job.process.send_signal(signal.SIGTERM)

    def _adopted_running(self) -> bool:
        """Whether a run an earlier server left still runs; those that ended are settled."""
        running = False
        for job in self._jobs.values():
            if job.adopted and job.state.status == "running":
                if jobdirs.lock_held(job.directory):
                    running = True
                else:
                    job.state = jobdirs.settled(job.state, job.directory)
                    jobdirs.save_state(job.directory, job.state)
        return running

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._closed and (self._adopted_running() or not self._waiting):
                    self._wake.wait(timeout=_POLL_S)
                if self._closed:
                    return
                job = self._waiting.popleft()
                self._update(job, status="running", started_at=_now())
            if self._launched(job):
                self._ended(job, self._wait(job))

    def _launched(self, job: _Job) -> bool:
        """Check the job's files again (outside the lock) and start its process; False if it ends here."""
        problem = None
        if job.recheck is not None:
            try:
                job.recheck()
            except (PermissionError, ValueError, OSError) as exc:  # a file changed while the job waited
                problem = f"refused at start: {exc}"
        with self._wake:
            if job.stop is not None:  # cancelled (or the server closing) meanwhile
                self._update(job, status=_STOPPED[job.stop][0], ended_at=_now(), error=_STOPPED[job.stop][1])
                return False
            if problem is not None:
                self._update(job, status="failed", ended_at=_now(), error=problem[: jobdirs.MAX_ERROR])
                return False
            try:
                job.process = self._start(job)
            except OSError as exc:
                self._update(job, status="failed", ended_at=_now(), error=f"cannot start: {exc.strerror}")
                return False
        return True

    def _wait(self, job: _Job) -> int:
        """Wait for the job's process; stop it at its time limit, kill it a grace period after a stop."""
        assert job.process is not None
        started, limit = time.monotonic(), job.state.time_limit_s
        while True:
            with self._wake:
                if job.stop is None and limit is not None and time.monotonic() - started >= limit:
                    self._stop(job, "timeout")
                if job.stop_at is not None and time.monotonic() >= job.stop_at + self.stop_grace_s:
                    job.killed = True
                    with contextlib.suppress(ProcessLookupError):
                        job.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                return job.process.wait(timeout=_POLL_S / 5)

    def _start(self, job: _Job) -> subprocess.Popen[bytes]:
        job.directory.mkdir(parents=True, exist_ok=True)
        command = [*self.command, "run", *job.arguments, "--out", str(job.directory), "--json"]
        if sys.platform == "linux":
            command = [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *command]
        with open(job.directory / "stdout.log", "wb") as out, open(job.directory / "stderr.log", "wb") as err:
            return subprocess.Popen(
                command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=run_environment(self.allow_env)
            )

    def _ended(self, job: _Job, status: int) -> None:
        run_dir = jobdirs.run_directory(job.directory)
        decided = jobdirs.outcome(run_dir)
        update: dict[str, object] = {"exit_status": status, "ended_at": _now(), "outcome": decided}
        killed = f" (killed {self.stop_grace_s:g} s after SIGTERM)" if job.killed else ""
        final: JobStatus
        if job.stop == "timeout":
            final, error = "failed", f"stopped after {job.state.time_limit_s:g} s wall-clock limit{killed}"
        elif job.stop is not None:
            final, error = _STOPPED[job.stop][0], _STOPPED[job.stop][1] + killed
        elif status in DECIDED and decided is not None:
            final, error = "complete", None
        else:
            why = jobdirs.error_message(job.directory / "stderr.log") or "no message"
            final, error = "failed", f"quantgate run exited with {status}: {why}"
        with self._wake:
            self._update(job, **update, status=final, error=error)

    def _refreshed(self, job: _Job) -> RunState:
        run_dir = jobdirs.run_directory(job.directory)
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
