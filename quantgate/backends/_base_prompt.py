"""The prompt text a base model reads: a chat rendered as a plain few-shot completion.

Gemma 3 270M as packaged here is a *base* model with no chat template, so any chat format wraps
the prompt in tokens the model never saw in training. The embedded backend renders the
conversation with `render_prompt`; so do an OpenAI-compatible server's variants with
`api = "completions"`, and the Ollama Modelfiles `quantgate ladder` writes (as a template), so
the same weights read the same text on every runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graphs.prompting import REPAIR_NAME

__all__ = ["render_prompt"]


def render_prompt(messages: Sequence[BaseMessage]) -> str:
    """Render a chat as a plain few-shot completion prompt for a base model.

    System text first; each human turn as ``Text:`` and each AI turn as ``JSON:``; a repair
    message (HumanMessage named `validator`) as an error note asking for corrected JSON.
    The prompt ends with ``JSON:`` and no space, since Gemma's tokenizer has ``' {"'`` as one
    token; the grammar allows that optional leading space.
    """
    parts: list[str] = []
    for message in messages:
        content = message.content if isinstance(message.content, str) else str(message.content)
        if isinstance(message, SystemMessage):
            parts.append(content.strip() + "\n\n")
        elif isinstance(message, HumanMessage) and message.name == REPAIR_NAME:
            parts.append(f"\nError: {content.strip()}\nCorrected JSON:")
        elif isinstance(message, HumanMessage):
            parts.append(f"Text:\n{content.strip()}\nJSON:")
        elif isinstance(message, AIMessage):
            parts.append(f" {content.strip()}\n\n")
    return "".join(parts).rstrip(" ")
