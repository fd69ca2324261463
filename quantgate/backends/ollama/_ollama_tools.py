"""Tool calling through Ollama's own `tools` (for a `tool_calling` task's Ollama variants).

The request and answer shapes are those of Ollama's `/api/chat` as the `ollama` Python client
(0.6.3, `ollama/_types.py`) types them: `ChatRequest.tools` is a list of
`{"type": "function", "function": {"name", "description", "parameters"}}` (the OpenAI function
format a task.json holds), and the answer's `Message.tool_calls` a list of
`{"function": {"name": str, "arguments": Mapping[str, Any]}}`, or none with plain `content`
when the model calls no tool. langchain-ollama passes `tools` through (`ChatOllama._chat_params`)
and reads `tool_calls` into `AIMessageChunk.tool_calls`.

`format` is not sent with `tools`: Ollama does not constrain a tool call by a grammar. The model
writes the call in its own chat template's syntax and the server parses it out of the text, so
the call is decoded freely, unlike the embedded backend's grammar restricted to a declared tool
and its parameters. The answer is read back into the task's record shape as every backend that
sends tools natively reads it (`quantgate.backends._native_tools`: one call, no call, several
calls, a call the client cannot read), so the same scorer and the same record schema judge it.
Every tool-calling task goes this way: one call or several (`"calls": "many"`, read back as
`{"calls": [...]}`), the tools the dataset's or its cases' own (a variant opened for a schema that
offers no tool sends none until a case brings its own); the variant's `native_tools` and
`runtime.decoding` say so.
"""

from __future__ import annotations

__all__ = ["TOOLS_DECODING"]

TOOLS_DECODING = "Ollama tools: the model's own tool-call template, parsed by the server; no grammar"
"""How an Ollama variant's calls are decoded for a tool-calling task (`runtime.decoding`)."""
