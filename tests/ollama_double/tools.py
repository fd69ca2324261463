"""Tool calls of the Ollama TEST DOUBLE: scripted answers to a chat that sends `tools`.

The double runs no model's tool-call template: a chat with `tools` is answered by the rules a
test set for its model (`POST /_double/tool_answers {"model": TAG, "rules": [...]}`, not part of
Ollama's API; `{"model": TAG}` alone clears them). The first rule whose `when` occurs in the last
user message (a rule without `when` always applies) gives the answer: its `tool_calls` as the
message's `tool_calls`, or its `content` as plain text; no rule, plain text. The shapes are those
of Ollama's `/api/chat` (the `ollama` client's `Message.tool_calls`: `[{"function": {"name",
"arguments"}}]`), served as Ollama streams them: one chunk with the message, then the final
`done` chunk. A rule's `tool_calls` are sent as written, so a test can send a malformed one (an
undeclared tool, arguments that are not an object). The chats sent with `tools` are kept, in
order, for `GET /_double/tool_requests` (the last 100). A `format` sent along with `tools` is not
used (quantgate sends none with tools; its tests check the kept requests for it).

The messages of a chat are read as Ollama's server decodes them (`api.Message` in ollama/ollama
`api/types.go`: `tool_calls` a list of `{"function": {"name": string, "arguments": object}}`, an
`id` optional): a chat whose messages do not decode is refused with 400, as Ollama refuses a body
it cannot bind (`chat_problem`). In the double's prompt (its token counts) an assistant's
`tool_calls` are written as JSON text, and a `tool` message as a user turn (`prompt_messages`).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from tests.ollama_double.models import model_name

NO_TOOL = "No tool fits."
"""The double's plain answer when no rule applies."""


class ToolAnswers:
    """Per model, the rules answering a chat with `tools`; and the chats received with `tools`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rules: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[dict[str, Any]] = []

    def configure(self, body: dict[str, Any]) -> None:
        with self.lock:
            self.rules[model_name(str(body["model"]))] = list(body.get("rules") or [])
            if not body.get("rules"):
                self.requests.clear()

    def message(self, tag: str, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message answering `body` (a chat with `tools`), after keeping the chat."""
        with self.lock:
            self.requests = [*self.requests[-99:], body]
            rules = list(self.rules.get(tag, []))
        users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
        last = users[-1] if users else ""
        rule = next((r for r in rules if str(r.get("when", "")) in last), None)
        if rule is not None and "tool_calls" in rule:
            return {"role": "assistant", "content": "", "tool_calls": rule["tool_calls"]}
        return {"role": "assistant", "content": (rule or {}).get("content", NO_TOOL)}


def final_fields(message: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
    """The final chunk's fields of a scripted answer: the prompt's token count (after any cut to the
    context); no durations and no answer tokens, as nothing was generated (a client's speed figures
    from them are then not measured)."""
    return {"message": message, "done_reason": "stop", "prompt_eval_count": prompt_tokens}


def _call_problem(where: str, call: Any) -> str | None:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return f"{where}: a tool call is an object with a `function` object"
    if not isinstance(function.get("name"), str):
        return f"{where}.function.name: cannot unmarshal {type(function.get('name')).__name__} into a string"
    if not isinstance(function.get("arguments", {}), dict):
        kind = type(function["arguments"]).__name__
        return f"{where}.function.arguments: cannot unmarshal {kind} into an object of arguments"
    return None


def chat_problem(body: dict[str, Any]) -> str | None:
    """Why Ollama would refuse to decode a chat's messages (400), or None: a message that is not an
    object, a role that is not a string, `tool_calls` that are not a list of calls each naming its
    function with an object of arguments."""
    messages = body.get("messages") or []
    if not isinstance(messages, list):
        return "messages: cannot unmarshal into a list of api.Message"
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        if not isinstance(message, dict) or not isinstance(message.get("role", ""), str):
            return f"{where}: cannot unmarshal into api.Message (an object with a string role)"
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            return f"{where}.tool_calls: cannot unmarshal into a list of api.ToolCall"
        for index, call in enumerate(calls):
            if problem := _call_problem(f"{where}.tool_calls[{index}]", call):
                return problem
    return None


def prompt_messages(raw: list[dict[str, Any]]) -> list[BaseMessage]:
    """A chat's messages as the double's prompt holds them: an assistant's `tool_calls` as JSON text
    after its content, a `tool` message as a user turn; other roles are left out."""
    messages: list[BaseMessage] = []
    for message in raw:
        role, content = message.get("role"), message.get("content") or ""
        if role == "assistant":
            calls = [c["function"] for c in message.get("tool_calls") or []]
            messages.append(AIMessage(content=content + (json.dumps(calls) if calls else "")))
        elif role in ("user", "tool"):
            messages.append(HumanMessage(content=content))
        elif role == "system":
            messages.append(SystemMessage(content=content))
    return messages
