"""SIGINT and SIGTERM under `stop_on_signals`: an `Interrupted` (a KeyboardInterrupt) first, an
immediate exit on the second; the previous handlers come back after the block."""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import threading
import time

import pytest

from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate._signals import Interrupted, stop_on_signals
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, QueuedChatModel
from tests.quantgate.evaluate.processes import session, wait_for
from tests.quantgate.evaluate.slow_backend import write_inputs

STOPPING = """
import sys, time
from pathlib import Path
from quantgate.evaluate._signals import stop_on_signals

with stop_on_signals():
    try:
        Path(sys.argv[1]).touch()
        time.sleep(120)
    except KeyboardInterrupt:
        Path(sys.argv[2]).touch()
        time.sleep(120)  # a slow clean-up
"""
"""A process that takes its time to stop after the first signal; argv: two marker files."""


def _signal_self(signum: int) -> None:
    """Send `signum` to this process and give the handler the time to run."""
    os.kill(os.getpid(), signum)
    for _ in range(100):
        time.sleep(0.05)


def _unhandled(signum: int, frame: object) -> None:
    raise AssertionError(f"{signal.Signals(signum).name} reached the handler set before the block")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_raises_interrupted_and_the_handlers_come_back(signum):
    before = signal.signal(signum, _unhandled)  # a failure fails the test, not the test process
    try:
        with pytest.raises(Interrupted) as raised, stop_on_signals():
            _signal_self(signum)
        assert signal.getsignal(signum) is _unhandled
    finally:
        signal.signal(signum, before)
    assert isinstance(raised.value, KeyboardInterrupt)
    assert raised.value.signal == signum
    assert raised.value.exit_status == 128 + signum
    assert str(raised.value) == f"interrupted by {signal.Signals(signum).name}"


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a shell's background job
    try:
        with stop_on_signals():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_main_thread_nothing_changes():
    seen: list[object] = []

    def inside() -> None:
        with stop_on_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join()
    assert seen == [signal.getsignal(signal.SIGTERM)]


def test_interrupted_survives_pickling():
    copy = pickle.loads(pickle.dumps(Interrupted(signal.SIGTERM)))
    assert (type(copy), copy.signal) == (Interrupted, signal.SIGTERM)


@pytest.mark.parametrize(
    ("first", "second"),
    [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)],
    ids=["SIGTERM-then-SIGINT", "SIGINT-then-SIGTERM"],
)
def test_a_second_signal_while_stopping_exits_at_once_with_its_status(sessions, tmp_path, first, second):
    ready, stopping = tmp_path / "ready", tmp_path / "stopping"
    command = [sys.executable, "-c", STOPPING, str(ready), str(stopping)]
    process = sessions.enter_context(session(command, stderr=tmp_path / "stderr.txt"))
    wait_for(ready.exists, timeout=60, what="start of the stopping process")
    process.send_signal(first)
    wait_for(stopping.exists, timeout=5, what="clean-up after the first signal")
    process.send_signal(second)
    assert process.wait(timeout=2) == 128 + second
    name = signal.Signals(second).name
    assert (tmp_path / "stderr.txt").read_text() == f"quantgate: {name} while stopping: exiting at once\n"


LAST_WORDS = """
import sys, time
from pathlib import Path
from quantgate.evaluate._signals import before_fast_exit, stop_on_signals

def fail():
    raise OSError(28, "No space left on device")

with stop_on_signals(), before_fast_exit(lambda: Path(sys.argv[2]).write_text("outer")):
    with before_fast_exit(fail), before_fast_exit(lambda: Path(sys.argv[3]).write_text("inner")):
        try:
            Path(sys.argv[1]).touch()
            time.sleep(120)
        except KeyboardInterrupt:
            Path(sys.argv[4]).touch()
            time.sleep(120)
"""
"""STOPPING, with last words registered: two that write a file, one between them that fails."""


def test_the_fast_exit_says_every_last_word_whatever_one_raises(sessions, tmp_path):
    ready, outer, inner, stopping = (tmp_path / name for name in ("ready", "outer", "inner", "stopping"))
    command = [sys.executable, "-c", LAST_WORDS, str(ready), str(outer), str(inner), str(stopping)]
    process = sessions.enter_context(session(command, stderr=tmp_path / "stderr.txt"))
    wait_for(ready.exists, timeout=60, what="start of the stopping process")
    process.send_signal(signal.SIGTERM)
    wait_for(stopping.exists, timeout=5, what="clean-up after the first signal")
    assert not inner.exists()  # the first signal says nothing: the run writes its summary itself
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=2) == 128 + signal.SIGTERM
    assert (outer.read_text(), inner.read_text()) == ("outer", "inner")
    assert (tmp_path / "stderr.txt").read_text().splitlines() == [
        "quantgate: SIGTERM while stopping: exiting at once",
        "quantgate: OSError: [Errno 28] No space left on device",
    ]


def test_an_interrupted_run_says_its_run_directory(tmp_path):
    dataset_dir, _ = write_inputs(tmp_path, cases=5, delay_s=0)
    model = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 3": Interrupted(signal.SIGTERM)})
    variants = VariantSet(variants=[Variant.from_chat_model("only", model)])
    options = RunOptions(out=tmp_path / "runs", progress=False, concurrency=1)
    with pytest.raises(Interrupted) as raised:
        run_evaluation(load_dataset(dataset_dir), variants, options=options)
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert raised.value.run_dir == run_dir
    assert load_run(run_dir).summary.status == "interrupted"


@pytest.mark.parametrize("concurrency", [1, 4])
def test_sigterm_stops_an_in_process_variant_from_python_with_no_case_started_after(tmp_path, concurrency):
    """`run_evaluation` called from Python with a chat model object (its cases on LangGraph's worker
    threads, which a signal does not reach): SIGTERM starts no further case, and the run ends at once."""
    from quantgate.inputs._dataset import Case, write_dataset
    from tests.fakes import SCHEMA
    from tests.quantgate.evaluate.slow_backend import SlowChatModel

    cases = [Case(id=f"c{i}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(60)]
    write_dataset(
        tmp_path / "d", schema=SCHEMA, cases=cases, examples=[Case(id="e", text="e", expected=GOOD)]
    )
    model = SlowChatModel(outputs=[json.dumps(GOOD)], delay_s=0.2)
    variants = VariantSet(variants=[Variant.from_chat_model("slow", model)])
    sent: list[float] = []

    def terminate_after_a_second() -> None:
        time.sleep(1.0)
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_after_a_second, daemon=True).start()
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False, concurrency=concurrency)
    with pytest.raises(Interrupted):
        run_evaluation(load_dataset(tmp_path / "d"), variants, options=options)
    assert time.perf_counter() - sent[0] < 1.0  # the cases in flight finish (0.2 s), no more
    calls = len(model.calls)
    assert calls < 30
    time.sleep(0.5)  # had queued cases gone on, in the background, there would be more by now
    assert len(model.calls) == calls
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert load_run(run_dir).summary.status == "interrupted"
