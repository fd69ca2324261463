"""The tools a production call brings (`ToolCaller`'s `tools=`), in the OpenAI function format as a
request's `tools`: read into the task's `Tool`s as a dataset line's own tools are (local `$ref`s
inlined, each tool checked, names unique), what is wrong named by its place (`tools[1].function.name`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from evaluators.errors import UsageError
from evaluators.task_models import Tool, unique_tools
from quantgate.inputs._problems import Problem, validation_problems
from quantgate.inputs._task_file import inlined_tools

__all__ = ["call_tools"]

_TOOLS: TypeAdapter[tuple[Tool, ...]] = TypeAdapter(tuple[Tool, ...])
_WHERE = "tools"


def call_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[Tool, ...]:
    """A call's tools as the task's `Tool`s.

    Raises:
        UsageError: Not a list of tools in the OpenAI function format, a `$ref` that points to
            nothing, a tool that is not valid, a name used twice, or no tool at all (each named by
            its place in `tools`).
    """
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise UsageError(f"tools: a list of tools is needed, not {type(tools).__name__}")
    if not tools:
        raise UsageError("tools: the list is empty; pass the tools the model may call, or None for the run's")
    problems: list[Problem] = []
    inlined = inlined_tools([dict(tool) if isinstance(tool, Mapping) else tool for tool in tools],
                            file=_WHERE, line=None, problems=problems)  # fmt: skip
    if inlined is None:
        raise UsageError(_message(problems))
    try:
        return unique_tools(_TOOLS.validate_python(inlined))
    except ValidationError as exc:
        raise UsageError(_message(validation_problems(exc, file=_WHERE, line=None))) from None
    except ValueError as exc:
        raise UsageError(f"tools: {exc}") from None


def _message(problems: Sequence[Problem]) -> str:
    """The problems on one line, each at its place in `tools` (`tools[1].function.name: ...`)."""
    return "; ".join(f"{_place(p.field)}: {p.message}" for p in problems)


def _place(field: str | None) -> str:
    if not field or field.startswith(_WHERE):
        return field or _WHERE
    return f"{_WHERE}{field}" if field.startswith("[") else f"{_WHERE}.{field}"
