"""The Ollama backend's clients are closed with the variant: the chat model of the dataset's schema
and the one of each tool set that cases bring (`OpenedVariant.for_schema`), one per tool set. The
server is stood in for by canned answers (no model, no socket); `ollama.Client.close` is counted."""

from __future__ import annotations

from typing import Any, cast

import pytest

from quantgate.backends.ollama._ollama import OllamaServer, open_ollama
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant

_SHOW = {"details": {"quantization_level": "Q4_K_M"}, "capabilities": ["completion", "tools"]}


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The `ollama.Client`s closed so far, with a server that answers without a socket."""
    import ollama

    answers: dict[str, Any] = {
        "version": "0.12.6", "show": _SHOW, "load": {}, "running": {"context_length": 8192},
        "digest": None, "local_pid": None,
    }  # fmt: skip
    for name, answer in answers.items():
        monkeypatch.setattr(OllamaServer, name, lambda self, *a, answer=answer, **k: answer)
    closes: list[Any] = []
    original = ollama.Client.close

    def counted(self: Any) -> None:
        closes.append(self)
        original(self)

    monkeypatch.setattr(ollama.Client, "close", counted)
    return closes


def _tool_schema(name: str) -> dict[str, Any]:
    tool = {"type": "object", "properties": {"name": {"const": name}, "arguments": {"type": "object"}}}
    return {
        "type": "object",
        "properties": {"call": {"anyOf": [{"type": "null"}, {**tool, "required": ["name", "arguments"]}]}},
        "required": ["call"],
    }


def test_each_tool_set_s_client_is_closed_with_the_variant(closed) -> None:
    variant = Variant(name="q4", backend="ollama", model="gemma3:270m-q4_K_M", options={"host": "http://h:1"})
    with open_ollama(variant, load_dataset("tool-calls").schema) as opened:
        assert opened.for_schema is not None
        first, second = opened.for_schema(_tool_schema("a")), opened.for_schema(_tool_schema("b"))
        assert opened.for_schema(_tool_schema("a")) is first  # one chat model (one client) per tool set
        assert second is not first
        assert closed == []
    clients = [cast(Any, m).inner._client for m in (opened.chat_model, first, second)]
    assert len(closed) == 3
    assert {id(c) for c in closed} == {id(c) for c in clients}


def _fail_inside(variant: Variant) -> None:
    with open_ollama(variant, load_dataset("restaurants").schema) as opened:
        assert opened.for_schema is not None
        opened.for_schema(_tool_schema("a"))
        raise RuntimeError("stop")


def test_the_clients_are_closed_when_the_block_fails(closed) -> None:
    variant = Variant(name="q4", backend="ollama", model="gemma3:270m-q4_K_M", options={"host": "http://h:1"})
    with pytest.raises(RuntimeError, match="stop"):
        _fail_inside(variant)
    assert len(closed) == 2
