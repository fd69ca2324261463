"""The signal tests' helpers: the processes a test starts stop on SIGINT even when the suite runs
with SIGINT ignored, as a shell starts a background job (`pytest &`)."""

from __future__ import annotations

import signal
import subprocess
import sys

from tests.quantgate.evaluate.processes import ctrl_c_for_children

PROBE = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
"""Prints whether Ctrl-C raises KeyboardInterrupt in the child (False: it inherited SIGINT ignored)."""


def _child_stops_on_ctrl_c() -> str:
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout


def test_children_stop_on_ctrl_c_when_the_suite_ignores_it() -> None:
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `pytest &` starts
    try:
        assert _child_stops_on_ctrl_c() == "False\n"  # what a test's run would inherit
        with ctrl_c_for_children():
            assert _child_stops_on_ctrl_c() == "True\n"
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # ignored again after the block
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if before is None else before)


def test_a_handler_already_set_is_left_alone() -> None:
    with ctrl_c_for_children():
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # pytest's, unchanged
        assert _child_stops_on_ctrl_c() == "True\n"
