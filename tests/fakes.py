"""The test fakes, in one place: fake chat models, the sample invoice schema and its record,
and a tiny dataset of five cases written from them (no real model anywhere).

- `QueuedChatModel` streams queued outputs, with usage metadata and optional failures.
- `VerifyingChatModel` is a `QueuedChatModel` that takes an answer to verify, as the embedded backend.
- `SleepyChatModel` streams one output slowly, refusing calls beyond a limit (load tests).
- `DelayedChatModel` streams pieces each after its own delay, or fails where told; `assert_delay`
  checks a time measured through it (stream timing).
- `SCHEMA` and `GOOD`: an invoice schema and a valid record of it.
- `write_tiny_dataset` writes them as a dataset (the `dataset` fixture in `tests/conftest.py`).
- `TOTAL_SCHEMA`, `case` and `write_dataset`: a two-field schema and datasets written case by case.
- `CLASSIFICATION_TASK` and `write_classification_dataset`: a three-label classification dataset.
- `write_fake_llama_tools`: a bin directory of fake llama.cpp tools and their manifest, as
  scripts/install-llama-tools.sh leaves it (`write_fake_llama_tool`: one tool script).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGenerationChunk
from pydantic import Field, PrivateAttr

from graphs.streamed import ModelCallError
from quantgate.backends._streaming import MessagesChatModel
from quantgate.evaluate.scheduler._warm_up import WARM_UP_TEXT
from quantgate.ladder._llama_tools import TOOL_NAMES

SCHEMA: dict[str, Any] = {
    "title": "Invoice",
    "type": "object",
    "properties": {
        "vendor": {"type": ["string", "null"], "description": "Who issued it"},
        "total": {"type": ["number", "null"], "description": "Total amount"},
        "issued": {"type": ["string", "null"], "format": "date"},
        "currency": {"type": ["string", "null"], "enum": ["EUR", "USD", None]},
    },
    "required": ["vendor", "total", "issued", "currency"],
}
"""An invoice schema: four nullable fields, one a date, one an enum."""

GOOD: dict[str, Any] = {"vendor": "Acme", "total": 12.5, "issued": "2024-03-03", "currency": "EUR"}
"""A valid record of `SCHEMA`."""


class QueuedChatModel(MessagesChatModel):
    """Streams queued outputs in order (the last one repeats). A run's warm-up prompt gets `{`
    and leaves the queue and `calls` as they were. An `Exception` in the queue is raised
    instead; `by_text` maps a substring of the conversation to a fixed output. With
    `max_tokens`, an output longer than that many 7-character pieces is cut there and ends with
    finish reason `length`, as a backend's token limit does."""

    outputs: list[Any]
    by_text: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int | None = None
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "queued-fake"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    def _next(self, messages: list[BaseMessage]) -> Any:
        text = " ".join(str(m.content) for m in messages)
        if WARM_UP_TEXT in text:  # a run's warm-up prompt: answered, neither queued nor counted
            return "{"
        with self._lock:
            self._calls.append(list(messages))
            for key, output in self.by_text.items():
                if key in text:
                    return output
            index = min(len(self._calls) - 1, len(self.outputs) - 1)
            return self.outputs[index]

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        output = self._next(messages)
        if isinstance(output, BaseException):
            raise output
        pieces = [output[i : i + 7] for i in range(0, len(output), 7)] or [""]
        cut = self.max_tokens is not None and len(pieces) > self.max_tokens
        pieces = pieces[: self.max_tokens] if cut else pieces
        for piece in pieces:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata={
                    "input_tokens": 100,
                    "output_tokens": len(pieces),
                    "total_tokens": 100 + len(pieces),
                },
                response_metadata={
                    "finish_reason": "length" if cut else "stop",
                    "eval_count": len(pieces),
                    "done": True,
                },
                chunk_position="last",
            )
        )


class VerifyingChatModel(QueuedChatModel):
    """A `QueuedChatModel` that takes an answer to verify (`answer=`), as the embedded backend does: it
    streams its own output whatever it is given, and its metadata says how that was obtained (`verified`
    when the given answer is its output, `verified_then_decoded` when not, `decoded` when none was
    given). `given` lists what each call was given, with its conversation's text; `drafting` the
    conversations of the calls asked to draft from text already seen (`LOOKUP_KWARG`)."""

    given: list[tuple[str, str | None]] = Field(default_factory=list)
    drafting: list[str] = Field(default_factory=list)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        given = kwargs.get("answer")
        answer = given.get("text") if isinstance(given, dict) else given
        chunks = list(self._answer(messages))
        conversation = " ".join(str(m.content) for m in messages)
        if WARM_UP_TEXT not in conversation:
            self.given.append((conversation, answer))
            if kwargs.get("lookup"):
                self.drafting.append(conversation)
        own = "".join(str(c.message.content) for c in chunks)
        how = "decoded" if answer is None else "verified" if answer == own else "verified_then_decoded"
        *body, last = chunks
        metadata = {**last.message.response_metadata, "obtained": how}
        if kwargs.get("top_logprobs"):  # one "token" per character, 0.9 on it
            metadata["top_logprobs"] = [{"token": ord(c), "top": [[ord(c), math.log(0.9)]]} for c in own]
        if answer is not None:
            same = next((i for i, (a, b) in enumerate(zip(answer, own, strict=False)) if a != b), None)
            verified = min(len(answer), len(own)) if same is None else same
            metadata |= {"answer_tokens": len(answer), "verified_tokens": verified}
            if isinstance(given, dict) and given.get("top_logprobs") is not None:
                read = min(verified + 1, len(answer))  # the positions kept, then the first other
                metadata["fidelity"] = {
                    "kld": [0.01] * read,
                    "top1": [True] * verified + [False] * (read - verified),
                    "delta_p": [-0.02] * read,
                    "kinds": ["value"] * read,
                }
        yield from body
        yield ChatGenerationChunk(message=last.message.model_copy(update={"response_metadata": metadata}))


class SleepyChatModel(MessagesChatModel):
    """Streams `text` in 4 pieces, sleeping `delay_s` before each; at most `limit` calls at once,
    beyond that it raises a busy `ModelCallError`."""

    text: str = json.dumps(GOOD)
    delay_s: float = 0.02
    limit: int | None = None
    _active: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "sleepy-fake"

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        with self._lock:
            if self.limit is not None and self._active >= self.limit:
                raise ModelCallError("busy", "server busy", retryable=True)
            self._active += 1
        try:
            size = len(self.text) // 4 + 1
            for i in range(0, len(self.text), size):
                time.sleep(self.delay_s)
                yield ChatGenerationChunk(message=AIMessageChunk(content=self.text[i : i + size]))
        finally:
            with self._lock:
                self._active -= 1


class DelayedChatModel(MessagesChatModel):
    """Streams `steps` in order: for each (delay, piece), sleeps `delay_s` seconds, then yields the
    piece, or raises it when it is an exception; after the last, a chunk without content carrying
    the usage (output tokens: the pieces yielded)."""

    steps: list[tuple[float, Any]]

    @property
    def _llm_type(self) -> str:
        return "delayed-fake"

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        for delay_s, piece in self.steps:
            time.sleep(delay_s)
            if isinstance(piece, BaseException):
                raise piece
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        n = len(self.steps)
        usage: UsageMetadata = {"input_tokens": 10, "output_tokens": n, "total_tokens": 10 + n}
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))


SLACK_S = 0.08
"""How much later than asked a `DelayedChatModel`'s sleep may end on a busy machine (never earlier)."""


def assert_delay(measured: float | None, given: float, slack: float = SLACK_S) -> None:
    """`measured` is the delay `given`, or up to `slack` later."""
    assert measured is not None
    assert given <= measured < given + slack


def write_tiny_dataset(root: Path) -> Path:
    """Write a dataset of five invoice cases into `root` (c0..c2 tagged `lang:es`, c3..c4
    `lang:en`, all expecting `GOOD`) with one few-shot example; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    lines = [
        {
            "id": f"c{i}",
            "text": f"case {i}",
            "expected": GOOD,
            "tags": ["lang:es" if i < 3 else "lang:en", "numbers"],
        }
        for i in range(5)
    ]
    (root / "cases.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (root / "examples.jsonl").write_text(json.dumps({"id": "e1", "text": "example", "expected": GOOD}) + "\n")
    (root / "README.md").write_text("tiny\n")
    return root


TOTAL_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "total": {"type": ["number", "null"], "description": "Total"},
        "when": {"type": ["string", "null"], "format": "date"},
    },
    "required": ["total", "when"],
}
"""A two-field schema (a nullable total and date) for datasets written case by case."""


def write_dataset(
    root: Path,
    lines: list[Any],
    schema: dict[str, Any] | str | None = TOTAL_SCHEMA,
    examples: list[dict[str, Any]] | None = None,
    card: bool = True,
    task: dict[str, Any] | str | None = None,
) -> Path:
    """Write a dataset into `root`: `lines` (dicts, or raw text for broken lines) as cases.jsonl,
    `schema` (a dict, or raw text; None: no schema.json), `task` as task.json when given (a dict,
    or raw text), `examples` when given, and a dataset card unless `card` is off."""
    root.mkdir(parents=True, exist_ok=True)
    for name, content in (("schema.json", schema), ("task.json", task)):
        if content is not None:
            (root / name).write_text(content if isinstance(content, str) else json.dumps(content))
    (root / "cases.jsonl").write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    )
    if examples is not None:
        (root / "examples.jsonl").write_text("\n".join(json.dumps(x) for x in examples) + "\n")
    if card:
        (root / "README.md").write_text("# test set\n")
    return root


LABELS = ["card_arrival", "card_lost", "top_up_failed"]
"""The labels of `CLASSIFICATION_TASK`."""

CLASSIFICATION_TASK: dict[str, Any] = {"kind": "classification", "labels": LABELS}
"""A task.json of a three-label classification."""


def write_classification_dataset(root: Path, golds: list[str], **options: Any) -> Path:
    """Write a classification dataset of `CLASSIFICATION_TASK` into `root`: case `c<i>` with text
    `text <i>` and gold label `golds[i]`, and one example; `options` go to `write_dataset`."""
    lines = [{"id": f"c{i}", "text": f"text {i}", "expected": {"label": g}} for i, g in enumerate(golds)]
    examples = [{"id": "e0", "text": "where is my card", "expected": {"label": "card_arrival"}}]
    return write_dataset(
        root, lines, **{"schema": None, "task": CLASSIFICATION_TASK, "examples": examples, **options}
    )


def case(i: int, total: Any = 1.0, **extra: Any) -> dict[str, Any]:
    """A case of `TOTAL_SCHEMA` whose gold is `total` (any JSON value, to test bad ones) and no date."""
    return {"id": f"c{i}", "text": f"text {i}", "expected": {"total": total, "when": None}, **extra}


def write_fake_llama_tool(
    directory: Path, name: str, *, version: str = "version: 0 (unknown)", status: int = 0
) -> Path:
    """A tool script that prints a line, then `version` on stderr (as llama.cpp does), and exits `status`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho 'warming up'\necho '{version}' >&2\nexit {status}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def fake_llama_tools_manifest(bindings_version: str = "0.3.36", **changes: object) -> dict[str, object]:
    """A manifest.json as scripts/install-llama-tools.sh writes it, with `changes`."""
    manifest: dict[str, object] = {
        "format_version": 1,
        "bindings_version": bindings_version,
        "sdist_sha256": "ab" * 32,
        "cmake_flags": ["-DCMAKE_BUILD_TYPE=Release"],
        "build_seconds": 361,
        "tools": dict.fromkeys(TOOL_NAMES, "version: 0 (unknown)"),
    }
    return {**manifest, **changes}


def write_fake_llama_tools(
    directory: Path, *, bindings_version: str = "0.3.36", tools: tuple[str, ...] = TOOL_NAMES
) -> Path:
    """A bin directory as scripts/install-llama-tools.sh leaves it: fake `tools` and the manifest."""
    for name in tools:
        write_fake_llama_tool(directory, name, version=f"version: 0 (unknown) {name}")
    manifest = fake_llama_tools_manifest(bindings_version)
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return directory
