"""Calling llama.cpp's own command-line tools (`llama-imatrix`, `llama-quantize`) for the ladder.

`find_llama_tool` is the one place that says where a tool is; every call goes through
`run_llama_tool`, which turns a missing tool or a failing one into a `CalibrationError` carrying
the tail of what the tool wrote, so that the command line exits 2 with the cause in its message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from evaluators.errors import UsageError

TOOLS_ENV = "QUANTGATE_LLAMA_TOOLS"
"""A directory holding llama.cpp's tools, looked in before PATH."""
INSTALL_HINT = "bash scripts/install-llama-tools.sh"
STDERR_TAIL_LINES = 12
"""The lines of a failing tool's output quoted in the message: its error and what led to it."""


class CalibrationError(UsageError):
    """A calibrated ladder that could not be made: the dataset, the tools or the importance matrix;
    the message says which and what to do. Nothing half-built is left in the ladder directory."""


def find_llama_tool(name: str) -> Path:
    """The path of one of llama.cpp's tools: in `$QUANTGATE_LLAMA_TOOLS`, else on PATH.

    The interface the ladder needs of the tools' finder (the finder that the tools' install script
    goes with replaces this body; its callers keep this signature).

    Raises:
        CalibrationError: The tool is in neither place; the message says how to build it.
    """
    directory = os.environ.get(TOOLS_ENV)
    found = shutil.which(name, path=directory) if directory else shutil.which(name)
    if found is None:
        where = f"{TOOLS_ENV}={directory}" if directory else "PATH"
        raise CalibrationError(f"{name} not found in {where}; build llama.cpp's tools with: {INSTALL_HINT}")
    return Path(found)


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
    sdist without git history), or what it wrote when it has no such line."""
    output = run_llama_tool(tool, ["--version"], step=f"asking {tool.name} its version")
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return next((line for line in lines if line.startswith("version")), lines[0] if lines else "unknown")
