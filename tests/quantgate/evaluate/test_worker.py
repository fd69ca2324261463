"""Jobs in a spawned worker process: results, errors and deaths come back as distinct outcomes."""

import os

import pytest

from quantgate.backends import BackendError
from quantgate.evaluate.worker import WorkerDiedError, WorkerFailedError, run_in_worker


def _square(n: int) -> int:
    return n * n


def _raise_value_error(message: str) -> None:
    raise ValueError(message)


def _raise_backend_error(message: str) -> None:
    raise BackendError(message)


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


def test_a_worker_that_dies_is_reported_with_its_exit_code() -> None:
    with pytest.raises(WorkerDiedError, match="exit code 3"):
        run_in_worker(_die, 3, name="test-die")
