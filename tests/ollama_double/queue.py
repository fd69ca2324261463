"""How the Ollama TEST DOUBLE admits requests: served one at a time, the others waiting in a
queue of at most `max_queue`, the rest refused.

docs.ollama.com/faq, "How does Ollama handle concurrent requests?": `OLLAMA_MAX_QUEUE` is "the
maximum number of requests Ollama will queue when busy before rejecting additional requests.
The default is 512", and `OLLAMA_NUM_PARALLEL` "the maximum number of parallel requests each
model will process at the same time" (the double serves one: OLLAMA_NUM_PARALLEL=1). A refused
request gets 503 (ollama/ollama#4144, which made the queue configurable: "Return a 503 when the
server is too busy") with the message Ollama's scheduler gives (`ErrMaxQueue`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_MAX_QUEUE = 512
BUSY = "server busy, please try again. maximum pending requests exceeded"
"""The text of Ollama's `ErrMaxQueue`."""


class QueueFullError(Exception):
    """More requests are waiting than `max_queue` allows."""


class Admission:
    """Counts the requests in the server (served or waiting) and refuses those beyond the queue."""

    def __init__(self, max_queue: int = DEFAULT_MAX_QUEUE) -> None:
        self.max_queue = max_queue
        self.num_parallel = 1
        self.inside = 0
        self.lock = threading.Lock()

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Hold a place for one request (it may still wait for the model).

        Raises:
            QueueFullError: `num_parallel` are served and `max_queue` wait already.
        """
        with self.lock:
            if self.inside >= self.num_parallel + self.max_queue:
                raise QueueFullError(BUSY)
            self.inside += 1
        try:
            yield
        finally:
            with self.lock:
                self.inside -= 1
