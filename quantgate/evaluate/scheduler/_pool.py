"""Warm variants for a run in rounds: each in a worker process of its own, or here.

A `VariantWorker` holds one `WarmVariant` (`quantgate.evaluate.scheduler._warm`) and is driven round by
round: `start` loads and warms it up, `run` evaluates a round's cases, `end` frees it and
returns its memory figures. `ProcessWorker` keeps it in a spawned process (clean memory
figures per variant; a crash in llama.cpp fails the variant, not the run; the process dies
with the run, even by `kill -9`), talking over a pipe; `InlineWorker` keeps it in this
process, for a backend without `process_isolation` (a chat model given from Python).

`warm_capacity` says how many variants may stay loaded at once in the memory available;
`WarmCapacity` holds that count for each machine a run keeps variants warm on (one here, one per
node of a Ray cluster, each judged from its own memory: `quantgate.cluster._node_capacity`).
"""

from __future__ import annotations

import importlib
import multiprocessing
import signal
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import psutil

from graphs.evaluation import CaseOutcome
from graphs.extraction import GivenAnswer
from quantgate.backends import BackendError, capabilities
from quantgate.evaluate.scheduler._variant import VariantJob, with_backend_module
from quantgate.evaluate.scheduler._warm import RoundRan, Warmed, WarmVariant, WorkerEnd
from quantgate.evaluate.scheduler._worker import prepare_worker, stop_worker
from quantgate.inputs._variants import Variant
from quantgate.rundir._build import case_record
from quantgate.rundir._jsonfile import RunWriteError
from quantgate.rundir._store import RunStore
from quantgate.rundir._summary import Placement

__all__ = [
    "InlineWorker",
    "JudgeCapacity",
    "ProcessWorker",
    "VariantWorker",
    "WarmCapacity",
    "make_worker",
    "warm_capacity",
]

ReferenceRecords = Mapping[str, dict[str, Any] | None] | None
Answers = Mapping[str, list[GivenAnswer | str | None]] | None
ModelOptions = Mapping[str, Mapping[str, Any]] | None
"""Keyword options of a case's model calls, by case id (the reference's `TOP_LOGPROBS_KWARG`)."""

PROCESS_OVERHEAD_MB = 600.0
"""Memory a worker holding an embedded model needs beside its weights: Python and its
libraries, llama.cpp's buffers and KV cache (measured: 500 MiB above the file size for each
rung of the Gemma 3 270M ladder at 4 slots, 2,048 tokens each), with a margin."""
CLIENT_OVERHEAD_MB = 250.0
"""Memory of a worker whose model lives in a server (Python and the client)."""
MEMORY_SHARE = 0.8
"""Share of the available memory the warm variants may take together."""


_HERE = Placement(executor="local")


class VariantWorker(Protocol):
    """A warm variant, driven round by round from the run.

    Attributes:
        placement: Where it is kept warm (recorded in variants.json).
    """

    @property
    def placement(self) -> Placement:
        """Where it is kept warm."""
        ...

    def start(self) -> Warmed:
        """Open and warm up the variant. Raises BackendError when it cannot be served."""
        ...

    def run(
        self,
        case_ids: list[str],
        reference_records: ReferenceRecords,
        on_case: Callable[[], None],
        answers: Answers = None,
        *,
        seconds_left: float | None = None,
        model_options: ModelOptions = None,
    ) -> RoundRan:
        """Evaluate a round's cases (records written as each ends; `on_case` after each), verifying
        the reference's `answers` where given, with each case's `model_options`; with
        `seconds_left`, no case starts once that many seconds have passed (the budget).

        Raises:
            BackendError: The variant failed (its worker died).
            RunWriteError: A record could not be written.
        """
        ...

    def rerun(self, case_ids: list[str], first_records: Mapping[str, dict[str, Any] | None]) -> RoundRan:
        """Answer these cases again one at a time, against `first_records`; nothing is written (the
        noise floor's arm: `WarmVariant.rerun`).

        Raises:
            BackendError: The variant failed (its worker died).
        """
        ...

    def end(self) -> WorkerEnd:
        """Free the variant; its memory figures."""
        ...

    def kill(self) -> None:
        """Stop at once (an interruption); what was written stays."""
        ...


class InlineWorker:
    """The variant in this process, its records written through the run's own store."""

    placement = _HERE

    def __init__(self, job: VariantJob, store: RunStore) -> None:
        self._on_case: Callable[[], None] = lambda: None
        name = job.variant.name

        def recorded(outcome: CaseOutcome) -> None:
            store.write_record(case_record(name, outcome))
            self._on_case()

        self._warm = WarmVariant(job, recorded)

    def start(self) -> Warmed:
        """Open and warm up the variant here."""
        try:
            return self._warm.start()
        except BaseException:
            self._warm.__exit__(None, None, None)
            raise

    def run(
        self,
        case_ids: list[str],
        reference_records: ReferenceRecords,
        on_case: Callable[[], None],
        answers: Answers = None,
        *,
        seconds_left: float | None = None,
        model_options: ModelOptions = None,
    ) -> RoundRan:
        """Evaluate a round's cases here."""
        self._on_case = on_case
        return self._warm.run(
            case_ids, reference_records, answers, seconds_left=seconds_left, model_options=model_options
        )

    def rerun(self, case_ids: list[str], first_records: Mapping[str, dict[str, Any] | None]) -> RoundRan:
        """Answer these cases again here, one at a time."""
        return self._warm.rerun(case_ids, first_records)

    def end(self) -> WorkerEnd:
        """Free the variant."""
        return self._warm.end()

    def kill(self) -> None:
        """Free the variant (nothing runs once this is called: the run was interrupted)."""
        self._warm.__exit__(None, None, None)


def _serve(connection: Connection, job: VariantJob) -> None:
    """The worker process: a `WarmVariant` answering the run's commands until `end`."""
    prepare_worker()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the run, which stops its workers
    lock = threading.Lock()  # cases finish on the graph's threads; one message at a time

    def send(kind: str, payload: Any) -> None:
        with lock:
            connection.send((kind, payload))

    name = job.variant.name
    try:
        if job.backend_module is not None:  # registers the backend in this process
            importlib.import_module(job.backend_module)
        with RunStore(job.run_dir) as store:

            def recorded(outcome: CaseOutcome) -> None:
                store.write_record(case_record(name, outcome))
                send("case", None)

            with WarmVariant(job, recorded) as warm:
                send("ready", warm.start())
                while (command := connection.recv())[0] != "end":
                    if command[0] == "rerun":
                        send("reran", warm.rerun(*command[1]))
                    else:
                        case_ids, reference_records, answers, seconds_left, options = command[1]
                        ran = warm.run(
                            case_ids,
                            reference_records,
                            answers,
                            seconds_left=seconds_left,
                            model_options=options,
                        )
                        send("ran", ran)
                send("ended", warm.end())
    except EOFError:
        pass  # the run is gone
    except BackendError as exc:
        send("backend_error", str(exc))
    except RunWriteError as exc:
        send("write_error", (str(exc.path), exc.errno, exc.reason))
    except Exception:
        send("crash", traceback.format_exc())
    finally:
        connection.close()


class ProcessWorker:
    """The variant in a spawned worker process of its own, driven over a pipe."""

    placement = _HERE

    def __init__(self, job: VariantJob) -> None:
        self.name = job.variant.name
        spawn = multiprocessing.get_context("spawn")
        self._connection, child = spawn.Pipe(duplex=True)
        self._process = spawn.Process(
            target=_serve, args=(child, with_backend_module(job)), name=f"quantgate-{self.name}"
        )
        self._child = child

    def start(self) -> Warmed:
        """Start the process; it loads and warms up the variant."""
        try:
            self._process.start()
            self._child.close()  # the worker's end: ours reads EOF once it has ended
            warmed: Warmed = self._expect("ready", on_case=lambda: None)
        except BaseException:
            self.kill()
            raise
        return warmed

    def run(
        self,
        case_ids: list[str],
        reference_records: ReferenceRecords,
        on_case: Callable[[], None],
        answers: Answers = None,
        *,
        seconds_left: float | None = None,
        model_options: ModelOptions = None,
    ) -> RoundRan:
        """Have the worker evaluate a round's cases (its deadline set there from `seconds_left`:
        the clocks of two processes need not agree)."""
        try:
            self._connection.send(
                ("run", (case_ids, reference_records, answers, seconds_left, model_options))
            )
            ran: RoundRan = self._expect("ran", on_case=on_case)
        except BaseException:
            self.kill()
            raise
        return ran

    def rerun(self, case_ids: list[str], first_records: Mapping[str, dict[str, Any] | None]) -> RoundRan:
        """Have the worker answer these cases again, one at a time (nothing written)."""
        try:
            self._connection.send(("rerun", (case_ids, dict(first_records))))
            ran: RoundRan = self._expect("reran", on_case=lambda: None)
        except BaseException:
            self.kill()
            raise
        return ran

    def end(self) -> WorkerEnd:
        """Have the worker free the variant and exit."""
        try:
            self._connection.send(("end", None))
            ended: WorkerEnd = self._expect("ended", on_case=lambda: None)
        finally:
            self.kill()
        return ended

    def kill(self) -> None:
        """Terminate the worker (a grace period, then SIGKILL), if it runs."""
        stop_worker(self._process)
        self._connection.close()

    def _expect(self, wanted: str, *, on_case: Callable[[], None]) -> Any:
        while True:
            try:
                kind, payload = self._connection.recv()
            except (EOFError, OSError):
                self._process.join(5)
                raise BackendError(
                    f"variant {self.name}: its worker process died (exit code {self._process.exitcode})"
                ) from None
            if kind == "case":
                on_case()
            elif kind == wanted:
                return payload
            else:
                _raise(kind, payload, self.name)


def _raise(kind: str, payload: Any, name: str) -> None:
    if kind == "backend_error":
        raise BackendError(payload)
    if kind == "write_error":
        path, errno, reason = payload
        raise RunWriteError(Path(path), OSError(errno, reason) if errno else OSError(reason))
    raise RuntimeError(f"variant {name} failed in its worker process:\n{payload}")


def make_worker(job: VariantJob, store: RunStore) -> VariantWorker:
    """A worker process for the variant when its backend allows one, else one in this process."""
    if capabilities(job.variant).process_isolation:
        return ProcessWorker(job)
    return InlineWorker(job, store)


def _need_mb(variant: Variant) -> float:
    """What keeping the variant loaded takes in this machine's memory, roughly."""
    if capabilities(variant).memory == "server":
        return CLIENT_OVERHEAD_MB
    size = variant.file_size_bytes
    return (size / 2**20 if size else 0.0) + PROCESS_OVERHEAD_MB


def warm_capacity(variants: Sequence[Variant], *, available_mb: float | None = None) -> int:
    """How many of the variants may stay loaded at once: all when they fit in `MEMORY_SHARE`
    of the available memory (the largest first), else as many as fit, and at least one.

    Args:
        variants: The variants of the run.
        available_mb: The memory available (default: what the system says now).
    """
    if available_mb is None:
        available_mb = psutil.virtual_memory().available / 2**20
    room = MEMORY_SHARE * available_mb
    needs = sorted((_need_mb(v) for v in variants), reverse=True)
    fitting = 0
    for need in needs:
        if need > room:
            break
        room -= need
        fitting += 1
    return max(fitting, 1)


@dataclass(frozen=True, kw_only=True)
class WarmCapacity:
    """How many variants may stay loaded at once on each machine.

    Attributes:
        machines: The count of each machine, by its node id (None: this machine).
        machine_of: The machine each variant is kept warm on, by name (not named: this machine).
    """

    machines: Mapping[str | None, int]
    machine_of: Mapping[str, str | None] = field(default_factory=dict)

    @classmethod
    def here(cls, count: int) -> WarmCapacity:
        """Every variant on this machine, `count` of them at once."""
        return cls(machines={None: count})

    def of(self, name: str) -> int:
        """How many variants may stay loaded at once on the machine of variant `name`."""
        return self.machines.get(self.machine_of.get(name), 1)

    def held(self, names: Sequence[str]) -> int:
        """How many of these variants stay loaded at once, each on its machine."""
        counts = Counter(self.machine_of.get(name) for name in names)
        return sum(min(count, self.machines.get(machine, 1)) for machine, count in counts.items())


JudgeCapacity = Callable[[Sequence[Variant]], WarmCapacity]
"""How many of a run's variants stay loaded at once on each machine (`VariantExecutor.warm_capacity`)."""
