"""`quantgate doctor` on llama.cpp's tools: each tool's path and version, the llama.cpp they were built
from against the installed bindings', and "not built: run ..." when they are missing (a warning only)."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from quantgate.cli._doctor import run_checks
from quantgate.cli._main import main
from tests.fakes import write_fake_llama_tool, write_fake_llama_tools

INSTALLED = version("llama-cpp-python")
RUN = "bash scripts/install-llama-tools.sh"


@pytest.fixture
def no_tools(tmp_path, monkeypatch):
    """No tools anywhere: an empty cache, PATH without them, no QUANTGATE_LLAMA_TOOLS."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.delenv("QUANTGATE_LLAMA_TOOLS", raising=False)


def _tool_lines(capsys, tmp_path) -> tuple[int, list[str]]:
    status = main(["doctor", "--ladder", str(tmp_path / "ladder")])
    lines = capsys.readouterr().out.splitlines()
    names = ("llama.cpp tools:", "llama-quantize:", "llama-imatrix:", "llama-perplexity:", "llama-server:")
    return status, [line for line in lines if line[5:].startswith(names)]


def test_missing_tools_are_a_warning_naming_the_script(no_tools, tmp_path, capsys):
    status, lines = _tool_lines(capsys, tmp_path)
    pattern = f"{tmp_path}/cache/quantgate/llama-tools/{INSTALLED}-*/bin and PATH"
    assert lines == [f"warn llama.cpp tools: not built (looked in {pattern}): run {RUN}"]
    others_fail = any(c.ok is False for c in run_checks(ladder_dir=tmp_path / "ladder"))
    assert status == (1 if others_fail else 0)


def test_a_build_from_other_bindings_says_so(no_tools, tmp_path, monkeypatch, capsys):
    tools = write_fake_llama_tools(tmp_path / "tools", bindings_version="0.3.1")
    monkeypatch.setenv("QUANTGATE_LLAMA_TOOLS", str(tools))
    _, lines = _tool_lines(capsys, tmp_path)
    assert lines[0] == (
        f"warn llama.cpp tools: built from llama-cpp-python 0.3.1's llama.cpp in 361 s, "
        f"but llama-cpp-python {INSTALLED} is installed: rebuild with {RUN}"
    )
    assert lines[4] == f"ok   llama-server: {tools}/llama-server: version: 0 (unknown) llama-server"


def test_the_cached_build_of_the_installed_bindings_is_ok(no_tools, tmp_path, capsys):
    cached = tmp_path / "cache" / "quantgate" / "llama-tools" / f"{INSTALLED}-0123456789ab" / "bin"
    write_fake_llama_tools(cached, bindings_version=INSTALLED, tools=("llama-quantize", "llama-server"))
    (cached / "llama-imatrix").write_text("#!/bin/sh\n", encoding="utf-8")  # not executable: not built
    _, lines = _tool_lines(capsys, tmp_path)
    pattern = f"{tmp_path}/cache/quantgate/llama-tools/{INSTALLED}-*/bin and PATH"
    assert lines == [f"warn llama.cpp tools: not built (looked in {pattern}): run {RUN}"]
    write_fake_llama_tools(cached, bindings_version=INSTALLED)
    _, lines = _tool_lines(capsys, tmp_path)
    assert lines[0] == (
        f"ok   llama.cpp tools: built from llama-cpp-python {INSTALLED}'s llama.cpp in 361 s, "
        f"the installed bindings' version ({cached})"
    )
    assert lines[1] == f"ok   llama-quantize: {cached}/llama-quantize: version: 0 (unknown) llama-quantize"
    assert len(lines) == 5


def test_a_tool_that_does_not_run_fails_and_a_missing_one_says_what_to_run(
    no_tools, tmp_path, monkeypatch, capsys
):
    tools = tmp_path / "tools"
    write_fake_llama_tool(tools, "llama-server", version="Illegal instruction", status=132)
    monkeypatch.setenv("QUANTGATE_LLAMA_TOOLS", str(tools))
    status, lines = _tool_lines(capsys, tmp_path)
    assert status == 1
    assert lines == [
        f"warn llama.cpp tools: in {tools}, no manifest.json: "
        "which llama.cpp they were built from is not recorded",
        f"warn llama-quantize: not built: run {RUN}",
        f"warn llama-imatrix: not built: run {RUN}",
        f"warn llama-perplexity: not built: run {RUN}",
        f"FAIL llama-server: {tools}/llama-server: "
        "does not run: exit status 132: warming up | Illegal instruction",
    ]


def test_an_env_var_naming_no_directory_fails(no_tools, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("QUANTGATE_LLAMA_TOOLS", str(tmp_path / "nowhere"))
    status, lines = _tool_lines(capsys, tmp_path)
    assert status == 1
    assert lines == [
        f"FAIL llama.cpp tools: QUANTGATE_LLAMA_TOOLS={tmp_path}/nowhere is not a directory; "
        f"put it in $QUANTGATE_LLAMA_TOOLS, or unset QUANTGATE_LLAMA_TOOLS and run: {RUN}"
    ]
