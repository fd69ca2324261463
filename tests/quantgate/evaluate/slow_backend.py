"""`quantgate` with one more backend, `slow`: a fake chat model that takes its time, in a worker.

    python -m tests.quantgate.evaluate.slow_backend run --dataset DIR --variants FILE.toml ...

runs the real command line. The backend declares `process_isolation`, so each variant runs in
a spawned worker process as an embedded one would; it is registered at import, and the worker
imports this module again (as its main module), so the worker knows it too; `slow-server` is
the same fake declared as a server's client, which also embeds (each text as 4 numbers of its
sha256); `slow-verifying` answers at once and reads the answers it is given to verify. No model is loaded:
each answer is a fixed valid record (`options.answer`, else `GOOD`), given after `options.delay_s`
seconds. With
`options.sigterm_marker`, the worker ignores SIGTERM and touches that file instead, as a worker
stuck in native code would not stop. With `options.die_after` = N, the process dies
(`os._exit(1)`, as a crash in native code) when asked for answer N + 1; with
`options.die_marker` too, only while that file does not exist (it is created as it dies), so a
process started again goes on. With `options.call_log`, each answer appends its start and end
(`time.time()`, on one line) to that file, so that a test can tell whether two variants' calls
overlapped in time.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from quantgate.backends import BackendCapabilities, OpenedVariant, register_backend
from quantgate.backends._embedders import OpenedEmbeddings, register_embeddings
from quantgate.cli import main
from quantgate.inputs._variants import Variant, VariantSet, write_variants_file
from tests.fakes import GOOD, SCHEMA, QueuedChatModel, VerifyingChatModel


class SlowChatModel(QueuedChatModel):
    """A `QueuedChatModel` that waits `delay_s` before each answer, and may die (module docstring)."""

    delay_s: float
    die_after: int | None = None
    die_marker: str | None = None
    call_log: str | None = None

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        started = time.time()
        time.sleep(self.delay_s)
        if self.call_log is not None:
            with open(self.call_log, "a", encoding="utf-8") as log:
                log.write(f"{started} {time.time()}\n")
        if self.die_after is not None and len(self.calls) >= self.die_after:
            marker = None if self.die_marker is None else Path(self.die_marker)
            if marker is None or not marker.exists():
                if marker is not None:
                    marker.touch()
                os._exit(1)
        yield from super()._answer(messages)


@contextmanager
def _open_slow(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    options = variant.options
    model = SlowChatModel(
        outputs=[json.dumps(options.get("answer", GOOD))],
        delay_s=float(options["delay_s"]),
        die_after=options.get("die_after"),
        die_marker=options.get("die_marker"),
        call_log=options.get("call_log"),
    )
    marker = variant.options.get("sigterm_marker")
    if marker is not None:  # opened in the worker's main thread, where handlers are set
        signal.signal(signal.SIGTERM, lambda signum, frame: Path(marker).touch())
    yield OpenedVariant(chat_model=model, runtime={"name": "slow fake", "version": "0"})


register_backend("slow", _open_slow, capabilities=BackendCapabilities(process_isolation=True))
# the same, declared as a server's client (its model's memory in a server, as Ollama's): its cases
# can be split between Ray tasks (`shards`)
register_backend(
    "slow-server",
    _open_slow,
    capabilities=BackendCapabilities(
        process_isolation=True, parallel="server", memory="server", embeddings=True
    ),
)


@contextmanager
def _open_verifying(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    model = VerifyingChatModel(outputs=[json.dumps(variant.options.get("answer", GOOD))])
    yield OpenedVariant(chat_model=model, runtime={"name": "verifying fake", "version": "0"})


# a fake that reads given answers (`VerifyingChatModel`), in a process of its own: candidates of a
# run in rounds on Ray verify the reference's answers in their actors
register_backend(
    "slow-verifying",
    _open_verifying,
    capabilities=BackendCapabilities(process_isolation=True, verification=True),
)


class _TextVectors(Embeddings):
    """Embeds a text as 4 numbers read from its sha256: the same text, the same vector, anywhere."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[b / 255 + 0.01 for b in hashlib.sha256(text.encode()).digest()[:4]] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@contextmanager
def _open_slow_embeddings(variant: Variant) -> Iterator[OpenedEmbeddings]:
    yield OpenedEmbeddings(embeddings=_TextVectors(), runtime={"name": "slow fake", "pid": os.getpid()})


register_embeddings("slow-server", _open_slow_embeddings)


def slow_variant(name: str, **options: Any) -> Variant:
    """A variant of the `slow` backend named `name`, with `options` (module docstring)."""
    return Variant(name=name, backend="slow", model="none", options=options)


def write_inputs(
    root: Path, *, cases: int, delay_s: float, sigterm_marker: Path | None = None
) -> tuple[Path, Path]:
    """A dataset of `cases` invoice cases and a variants file of one `slow` variant, under `root`.

    Returns:
        The dataset directory and the variants file.
    """
    dataset = root / "invoices"
    dataset.mkdir(parents=True)
    (dataset / "schema.json").write_text(json.dumps(SCHEMA))
    lines = [
        {"id": f"c{i}", "text": f"case {i}", "expected": GOOD, "tags": ["lang:en"]} for i in range(cases)
    ]
    (dataset / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (dataset / "examples.jsonl").write_text(
        json.dumps({"id": "e1", "text": "example", "expected": GOOD}) + "\n"
    )
    (dataset / "README.md").write_text("invoices for the signal tests\n")
    variants = root / "variants.toml"
    options: dict[str, Any] = {"delay_s": delay_s}
    if sigterm_marker is not None:
        options["sigterm_marker"] = str(sigterm_marker)
    write_variants_file(variants, VariantSet(reference="slow", variants=[slow_variant("slow", **options)]))
    return dataset, variants


if __name__ == "__main__":
    sys.exit(main())
