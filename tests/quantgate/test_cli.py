import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quantgate.cli import main


def test_console_script_is_installed():
    script = shutil.which("quantgate", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("quantgate is not installed in this environment (pip install -e .)")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, check=True, timeout=120)
    for command in ("datasets", "score", "ladder", "run"):
        assert command in result.stdout


def test_invalid_variant_spec_is_a_clear_error(capsys):
    assert main(["run", "--dataset", "invoices", "--variants", "llamacpp:/nope/model.gguf"]) == 2
    assert "no GGUF file at /nope/model.gguf" in capsys.readouterr().err
    assert main(["run", "--dataset", "invoices", "--variants", "vllm:x"]) == 2
    assert "unknown backend 'vllm'" in capsys.readouterr().err


def test_datasets_list(capsys):
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "invoices" in out
    assert "long-documents" in out
