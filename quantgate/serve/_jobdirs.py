"""What a job's directory on disk says, so that a restarted server lists the runs of the last one.

    OUT/<job-id>/job.json        the job's state (`RunState`), rewritten at each change
    OUT/<job-id>/<run-id>/       the run directory `quantgate run` writes, locked while it runs
    OUT/<job-id>/stderr.log      the run's messages (`error_message` takes the last error from it)
    OUT/serve.lock               held by the server using OUT (`claim`), holding its pid

A job the last server left queued never started; one it left running either still runs (its run
directory's lock is held: `quantgate.rundir._store.RunStore`) or ended when its server did, and
its run directory says how far it got.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from pathlib import Path

from pydantic import ValidationError

from evaluators.errors import UsageError
from quantgate.rundir._files import DECISION_JSON, SUMMARY_FILE
from quantgate.rundir._jsonfile import RunWriteError, write_model
from quantgate.serve._requests import RunState

JOB_FILE = "job.json"
SERVER_LOCK = "serve.lock"
MAX_ERROR = 500
"""Characters of a run's error kept in its state."""
_JOB_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
_BYTES = re.compile(r"""b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*\"""")


class OutInUseError(UsageError):
    """Another server already uses the `--out` directory."""


def claim(out: Path) -> int:
    """Lock `out` for this server (an flock on `OUT/serve.lock`, which holds its pid), so that no two
    servers settle, rewrite or run each other's jobs; the lock goes with the descriptor returned
    (closed, or the server's process ending, even by kill -9).

    Raises:
        OutInUseError: Another live server holds it.
        OSError: `out` cannot be made or the lock file cannot be opened.
    """
    out.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(out / SERVER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(descriptor, 32).decode("ascii", "replace").strip() or "unknown"
        os.close(descriptor)
        raise OutInUseError(
            f"--out {out} is already used by another quantgate serve (pid {holder}); stop it, or give "
            "this one another --out"
        ) from None
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, str(os.getpid()).encode(), 0)
    return descriptor


def run_directory(job_dir: Path) -> Path | None:
    """The run directory `quantgate run` made in a job's directory, once its summary exists."""
    if not job_dir.is_dir():
        return None
    return next((p for p in sorted(job_dir.iterdir()) if (p / SUMMARY_FILE).is_file()), None)


def run_status(run_dir: Path | None) -> str | None:
    """summary.json's status, if it can be read."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        return (
            str(json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))["status"])
            if run_dir
            else None
        )
    return None


def outcome(run_dir: Path | None) -> str | None:
    """decision.json's outcome, if the run was decided."""
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        return (
            json.loads((run_dir / DECISION_JSON).read_text(encoding="utf-8")).get("outcome")
            if run_dir
            else None
        )
    return None


def lock_held(job_dir: Path) -> bool:
    """Whether a live process holds the lock of a directory in the job's directory (a run going on)."""
    for directory in (p for p in job_dir.iterdir() if p.is_dir()) if job_dir.is_dir() else ():
        try:
            descriptor = os.open(directory, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(descriptor)  # releases the shared lock just taken
    return False


def error_message(stderr_log: Path, lines: int = 4) -> str:
    """The run's last error: from its last `error:` line on (else its last lines), byte strings a
    message quotes from a file left out, at most `MAX_ERROR` characters."""
    try:
        text = stderr_log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    start = max((i for i, line in enumerate(text) if "error:" in line), default=max(len(text) - lines, 0))
    message = " | ".join(line.strip() for line in text[start : start + lines])
    message = _BYTES.sub("b'…'", message)
    return message if len(message) <= MAX_ERROR else message[: MAX_ERROR - 1] + "…"


def save_state(job_dir: Path, state: RunState) -> None:
    """Write the job's state file (a full disk leaves the previous one: the server goes on)."""
    with contextlib.suppress(RunWriteError, OSError):
        job_dir.mkdir(parents=True, exist_ok=True)
        write_model(job_dir / JOB_FILE, state)


def settled(state: RunState, job_dir: Path) -> RunState:
    """The final state of a job its server left queued or running, from what its directory says."""
    if state.status == "queued":
        return state.model_copy(update={"status": "failed", "error": "not started: the server stopped first"})
    run_dir = run_directory(job_dir)
    status, decided = run_status(run_dir), outcome(run_dir)
    if status == "complete" and decided is not None:
        return state.model_copy(update={"status": "complete", "outcome": decided})
    says = f"; its run directory says {status}" if status else ""
    return state.model_copy(update={"status": "failed", "error": f"the server stopped while it ran{says}"})


def recovered_states(out: Path) -> list[tuple[RunState, bool]]:
    """The jobs an earlier server left under `out`, oldest first, each with whether its run still
    goes on (its lock held: it counts as running until it ends); the others settled."""
    found: list[tuple[RunState, bool]] = []
    for job_dir in sorted(out.iterdir()) if out.is_dir() else ():
        if not _JOB_ID.fullmatch(job_dir.name) or not (job_dir / JOB_FILE).is_file():
            continue
        try:
            state = RunState.model_validate_json((job_dir / JOB_FILE).read_bytes())
        except (OSError, ValidationError):
            continue
        if state.status not in ("queued", "running"):
            found.append((state, False))
        elif state.status == "running" and lock_held(job_dir):
            found.append((state, True))
        else:
            state = settled(state, job_dir)
            save_state(job_dir, state)
            found.append((state, False))
    return found
