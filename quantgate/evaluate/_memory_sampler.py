"""Measuring process memory with memory-profiler: single readings and a background sampler."""

from __future__ import annotations

import threading
from types import TracebackType

import psutil
from memory_profiler import memory_usage


def rss_mb(pid: int = -1, *, include_children: bool = False) -> float:
    """Resident set size of a process in MiB (-1: this process), its children optionally added."""
    return float(memory_usage(pid, interval=0, timeout=None, include_children=include_children)[0])


class RssSampler:
    """Samples a process's RSS every `interval` seconds in a background thread; keeps the peak.

    A process that ends while it is sampled (a local server that went down) leaves the peak of
    the samples taken while it ran, and `ended` set.

    Use as a context manager around the work to measure:

        with RssSampler() as sampler:
            run_cases()
        sampler.peak_mb, sampler.samples
    """

    def __init__(self, pid: int = -1, interval: float = 0.05, *, include_children: bool = False) -> None:
        self.pid = pid
        self.include_children = include_children
        self.interval = interval
        self.peak_mb: float | None = None
        self.start_mb: float | None = None
        self.samples = 0
        self.ended = False
        self._stop = threading.Event()
        self._active = threading.Event()
        self._active.set()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _sample(self) -> None:
        if self.ended:
            return
        try:
            value = rss_mb(self.pid, include_children=self.include_children)
        except psutil.NoSuchProcess:
            self.ended = True
            return
        self.peak_mb = value if self.peak_mb is None else max(self.peak_mb, value)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval) and not self.ended:
            self._active.wait()
            self._sample()

    def pause(self) -> None:
        """Stop sampling until `resume` (a warm model waiting for its next round neither grows
        nor should take CPU from the variant that runs), after one last sample."""
        self._sample()
        self._active.clear()

    def resume(self) -> None:
        """Sample again."""
        self._active.set()

    def __enter__(self) -> RssSampler:
        self._sample()
        self.start_mb = self.peak_mb
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._active.set()
        self._thread.join()
        self._sample()
