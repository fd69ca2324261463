"""Jobs in a spawned worker process: results, errors and deaths come back as distinct outcomes."""

import errno
import os
from pathlib import Path

import pytest

from quantgate.backends import BackendError
from quantgate.evaluate.scheduler._worker import WorkerDiedError, WorkerFailedError, run_in_worker
from quantgate.rundir._jsonfile import RunWriteError


def _square(n: int) -> int:
    return n * n


def _raise_value_error(message: str) -> None:
    raise ValueError(message)


def _raise_backend_error(message: str) -> None:
    raise BackendError(message)


def _disk_full(path: str) -> None:
    raise RunWriteError(Path(path), OSError(errno.ENOSPC, "No space left on device"))


def _die(code: int) -> None:
    os._exit(code)


def test_the_result_comes_back() -> None:
    assert run_in_worker(_square, 7, name="test-square") == 49


def test_an_exception_comes_back_with_the_worker_traceback() -> None:
    with pytest.raises(WorkerFailedError, match="ValueError: bad input"):
        run_in_worker(_raise_value_error, "bad input", name="test-raise")


def test_a_backend_error_keeps_its_type_and_message() -> None:
    with pytest.raises(BackendError, match=r"^no GGUF here$"):
        run_in_worker(_raise_backend_error, "no GGUF here", name="test-backend")


def test_a_run_file_that_cannot_be_written_keeps_its_type_file_and_reason(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    with pytest.raises(RunWriteError) as caught:
        run_in_worker(_disk_full, str(path), name="test-full")
    assert (caught.value.path, caught.value.errno, caught.value.reason) == (
        path,
        errno.ENOSPC,
        "No space left on device",
    )
    assert (
        str(caught.value)
        == f"cannot write {path}: No space left on device; what was written before it is kept"
    )


def test_a_worker_that_dies_is_reported_with_its_exit_code() -> None:
    with pytest.raises(WorkerDiedError, match="exit code 3"):
        run_in_worker(_die, 3, name="test-die")
