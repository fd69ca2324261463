"""Calling llama.cpp's own command-line tools (`llama-imatrix`, `llama-quantize`) for the ladder.

`find_llama_tool` is the one place that says where a tool is; every call goes through
`run_llama_tool`, which turns a missing tool or a failing one into a `CalibrationError` carrying
the tail of what the tool wrote, so that the command line exits 2 with the cause in its message.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from evaluators.errors import UsageError
from quantgate.ladder._llama_tools import LlamaToolError, llama_tool
from quantgate.ladder._llama_tools import tool_version as read_tool_version

STDERR_TAIL_LINES = 12
"""The lines of a failing tool's output quoted in the message: its error and what led to it."""


class CalibrationError(UsageError):
    """A calibrated ladder that could not be made: the dataset, the tools or the importance matrix;
    the message says which and what to do. Nothing half-built is left in the ladder directory."""


def find_llama_tool(name: str) -> Path:
    """The path of one of llama.cpp's tools, found as `quantgate doctor` finds them
    (`quantgate.ladder._llama_tools`: `$QUANTGATE_LLAMA_TOOLS`, the build cache, PATH).

    Raises:
        CalibrationError: The tool is not there; the message says where it looked and how to build it.
    """
    try:
        return llama_tool(name)
    except LlamaToolError as exc:
        raise CalibrationError(str(exc)) from exc


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-STDERR_TAIL_LINES:]) or "(it wrote nothing)"


def run_llama_tool(tool: Path, arguments: Sequence[str | Path | int], *, step: str) -> str:
    """Run a tool to completion and return what it wrote (stdout, then stderr).

    Args:
        tool: The tool's path (`find_llama_tool`).
        arguments: Its arguments.
        step: What the call is for, for the message (`computing the importance matrix`).

    Raises:
        CalibrationError: The tool could not start or exited with an error; the message quotes the
            last lines it wrote.
    """
    command = [str(tool), *map(str, arguments)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    except OSError as exc:
        raise CalibrationError(f"{step}: cannot run {tool}: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        raise CalibrationError(
            f"{step}: {tool.name} exited with status {done.returncode}; the end of its output:\n"
            f"{_tail(done.stderr or done.stdout)}"
        )
    return done.stdout + done.stderr


def tool_version(tool: Path) -> str:
    """The tool's own `--version` line (`version: 1 (abc123)`; `0 (unknown)` when built from an
    sdist without git history), as `quantgate doctor` reads it.

    Raises:
        CalibrationError: The tool does not run; the message has the tail of what it wrote.
    """
    found = read_tool_version(tool)
    if found.problem is not None:
        raise CalibrationError(f"asking {tool.name} its version: it does not run ({found.problem})")
    return found.version_line
