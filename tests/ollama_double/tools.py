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
order, for `GET /_double/tool_requests` (the last 100).
"""

from __future__ import annotations

import threading
from typing import Any

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
