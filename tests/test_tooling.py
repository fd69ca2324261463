"""The linters are part of the test suite, so the README's test command checks them too."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tool_is_clean(command):
    executable = shutil.which(command[0], path=str(Path(sys.executable).parent)) or shutil.which(command[0])
    if executable is None:
        pytest.skip(f"{command[0]} is not installed (pip install -e '.[test]')")
    result = subprocess.run([executable, *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
