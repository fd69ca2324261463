"""The GGUF's own chat template on the embedded backend (the `chat_template` option).

By default the embedded backend prompts a model as a base model: the chat rendered as a plain
few-shot completion (`render_prompt`). An instruct GGUF was trained on its chat template instead
(`tokenizer.chat_template` in its metadata, Jinja2 text). With `chat_template = true` the engine
renders that template with llama-cpp-python's own `Jinja2ChatFormatter` (what its
`create_chat_completion` does with a GGUF's template): the messages as chat API messages
(`chat_messages`, as they go to Ollama and to an OpenAI-compatible server's `/apply-template`),
a tool-calling task's tools in the OpenAI function format (`_schema_tools`: the tools the schema,
and so the grammar, lets the answer call, a case's own when it brings them), the
generation prompt added. The text is tokenized as llama-cpp-python tokenizes a formatter's prompt:
special tokens parsed (`<start_of_turn>` is one token), no BOS added (the template writes
`bos_token`). The grammar still constrains the answer, so it is scored the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from quantgate.backends._base_prompt import render_prompt
from quantgate.backends._forcing import chat_messages
from quantgate.backends._native_tools import native_tools_of
from quantgate.capacity._gguf_metadata import read_gguf_metadata

__all__ = ["CHAT_TEMPLATE_KEY", "BasePrompt", "ChatTemplate", "EmbeddedPrompt", "missing_chat_template"]

CHAT_TEMPLATE_KEY = "tokenizer.chat_template"
"""The GGUF metadata key of a model's chat template."""


def _no_template(path: Path) -> str:
    return (
        f"{path} has no chat template ({CHAT_TEMPLATE_KEY} is not in its metadata): the chat_template "
        "option renders the GGUF's own template; remove the option (the base-model prompt) or use an "
        "instruct GGUF that carries one"
    )


def _formatter(source: str, path: Path, *, bos: str = "", eos: str = "", eos_id: int = -1) -> Any:
    """llama-cpp-python's formatter over a template text.

    Raises:
        ValueError: The text is not a Jinja2 template (the message names `path` and the line).
    """
    import jinja2
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    try:
        return Jinja2ChatFormatter(template=source, bos_token=bos, eos_token=eos, stop_token_ids=[eos_id])
    except jinja2.TemplateError as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, jinja2.TemplateSyntaxError) else ""
        raise ValueError(f"{path}: its chat template is not a valid Jinja2 template{where}: {exc}") from None


def _schema_tools(schema: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The tools a tool-calling task's record schema lets the answer call, in the OpenAI function
    format, for one call or several (`native_tools_of`); None for any other schema or no tools."""
    native = native_tools_of(schema)
    return native.tools if native is not None and native.tools else None


def missing_chat_template(path: Path) -> str | None:
    """Why the GGUF at `path` cannot be prompted through its chat template (read from its header,
    before any model loads): none, or one that does not compile; None when it can.

    Raises:
        ModelFileError: The file is missing, not a GGUF, corrupt or truncated (named).
    """
    template = read_gguf_metadata(path).get(CHAT_TEMPLATE_KEY)
    if not isinstance(template, str) or not template.strip():
        return _no_template(path)
    try:
        _formatter(template, path)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass(frozen=True, kw_only=True)
class BasePrompt:
    """The base-model prompt (the default): `render_prompt`'s text, tokenized with BOS added."""

    def text(self, messages: Sequence[BaseMessage], schema: Mapping[str, Any] | None) -> str:
        """The prompt text of `messages` (`schema` is not read)."""
        return render_prompt(messages)

    def tokens(self, llama: Any, text: str) -> list[int]:
        """`text`'s tokens as the model reads them."""
        return list(llama.tokenize(text.encode("utf-8")))

    def tools_tokens(self, schema: Mapping[str, Any], count: Callable[[str], int]) -> int:
        """Tokens the prompt adds for a task's tools beyond its messages: none."""
        return 0

    def record(self) -> dict[str, Any]:
        """What the variant's runtime record says of its prompt."""
        return {"prompt": "render_prompt: the base-model plain few-shot text", "chat_template_sha256": None}


@dataclass(frozen=True, kw_only=True)
class ChatTemplate:
    """A GGUF's chat template, rendered by llama-cpp-python's `Jinja2ChatFormatter`.

    Attributes:
        source: The template's Jinja2 text, as the GGUF holds it.
        formatter: The formatter over it, with the model's BOS and EOS texts.
    """

    source: str
    formatter: Any

    @classmethod
    def of_model(cls, llama: Any, path: Path, *, free_on_error: bool = False) -> ChatTemplate:
        """The chat template of a loaded `llama_cpp.Llama`, with its BOS and EOS token texts (as
        llama-cpp-python builds its own formatter of a GGUF's template); with `free_on_error`, the
        model is closed before the error is raised.

        Raises:
            ValueError: The model has no chat template, or one that does not compile (the message
                names `path`).
        """
        try:
            source = llama.metadata.get(CHAT_TEMPLATE_KEY)
            if not isinstance(source, str) or not source.strip():
                raise ValueError(_no_template(path))
            bos, eos = llama.token_bos(), llama.token_eos()
            spelled = {t: llama._model.token_get_text(t) if t != -1 else "" for t in (bos, eos)}
            formatter = _formatter(source, path, bos=spelled[bos], eos=spelled[eos], eos_id=eos)
        except ValueError:
            if free_on_error:
                llama.close()
            raise
        return cls(source=source, formatter=formatter)

    @property
    def sha256(self) -> str:
        """The template text's sha256 (hex), as recorded."""
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    def text(self, messages: Sequence[BaseMessage], schema: Mapping[str, Any] | None) -> str:
        """The template rendered over `messages` with the generation prompt, and the tools of
        `schema` when it is a tool-calling task's record schema.

        Raises:
            ValueError: The template refuses the messages (its `raise_exception`, e.g. roles that
                do not alternate) or fails on them.
        """
        import jinja2

        tools = _schema_tools(schema) if schema is not None else None
        try:
            return str(self.formatter(messages=chat_messages(messages), tools=tools).prompt)
        except jinja2.TemplateError as exc:
            raise ValueError(f"the chat template failed on the messages: {exc}") from None

    def tokens(self, llama: Any, text: str) -> list[int]:
        """`text`'s tokens as llama-cpp-python reads a formatter's prompt: special tokens parsed,
        no BOS added (the template writes it)."""
        return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def tools_tokens(self, schema: Mapping[str, Any], count: Callable[[str], int]) -> int:
        """Tokens the template adds for a tool-calling task's tools (their JSON, counted by `count`, as
        the graph counts tools that go natively), which the context window left for messages loses."""
        tools = _schema_tools(schema)
        return count(json.dumps(tools, ensure_ascii=False)) if tools else 0

    def record(self) -> dict[str, Any]:
        """What the variant's runtime record says of its prompt: the template and its sha256."""
        return {
            "prompt": f"the GGUF's chat template ({CHAT_TEMPLATE_KEY}) by Jinja2ChatFormatter",
            "chat_template_sha256": self.sha256,
        }


EmbeddedPrompt = BasePrompt | ChatTemplate
"""How the embedded engine turns a chat into the text and tokens its model reads."""
