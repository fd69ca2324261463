"""Finding llama.cpp's tools: $QUANTGATE_LLAMA_TOOLS, the cache for the bindings' version, PATH; with
fake tool scripts (no real build), and one test of the real build that skips when it is not there."""

from __future__ import annotations

import json
import subprocess

import pytest

from quantgate.ladder import LlamaToolError, find_llama_tools
from quantgate.ladder._llama_tools import INSTALL_COMMAND, TOOL_NAMES, tools_cache_root
from tests.fakes import fake_llama_tools_manifest, write_fake_llama_tool, write_fake_llama_tools


def test_the_env_var_directory_comes_first_with_paths_versions_andfake_llama_tools_manifest(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_fake_llama_tools(tools_cache_root() / "0.3.36-0123456789ab" / "bin")  # not taken: the env var wins
    env_dir = write_fake_llama_tools(tmp_path / "mine", bindings_version="0.3.35")
    found = find_llama_tools(environ={"QUANTGATE_LLAMA_TOOLS": str(env_dir)}, bindings_version="0.3.36")
    assert found.source == "env"
    assert found.tools["llama-quantize"].path == env_dir / "llama-quantize"
    assert found.tools["llama-server"].version_line == "version: 0 (unknown) llama-server"
    assert found.tools["llama-server"].version == "warming up\nversion: 0 (unknown) llama-server"
    assert found.manifest is not None
    assert found.manifest.bindings_version == "0.3.35"
    assert found.manifest.build_seconds == 361
    assert found.missing == []
    assert found.require("llama-imatrix") == env_dir / "llama-imatrix"


def test_an_env_var_that_is_not_a_directory_is_named_in_the_error(tmp_path):
    with pytest.raises(LlamaToolError, match=r"QUANTGATE_LLAMA_TOOLS=.*nowhere is not a directory") as error:
        find_llama_tools(environ={"QUANTGATE_LLAMA_TOOLS": str(tmp_path / "nowhere")})
    assert INSTALL_COMMAND in str(error.value)


def test_a_tool_missing_from_the_env_var_directory_says_where_and_what_to_run(tmp_path):
    env_dir = write_fake_llama_tools(tmp_path / "mine", tools=("llama-quantize",))
    found = find_llama_tools(environ={"QUANTGATE_LLAMA_TOOLS": str(env_dir)})
    assert found.missing == ["llama-imatrix", "llama-perplexity", "llama-server"]
    with pytest.raises(LlamaToolError) as error:
        found.require("llama-server")
    assert str(error.value) == (
        f"llama-server not found (looked in {env_dir}); put it in $QUANTGATE_LLAMA_TOOLS, "
        f"or unset QUANTGATE_LLAMA_TOOLS and run: {INSTALL_COMMAND}"
    )


def test_the_cache_holds_the_build_for_the_installed_bindings_version(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tools_cache_root()
    assert root == tmp_path / "cache" / "quantgate" / "llama-tools"
    write_fake_llama_tools(root / "0.3.35-0123456789ab" / "bin", bindings_version="0.3.35")  # another version
    write_fake_llama_tools(root / "0.3.36-aaaaaaaaaaaa" / "bin", tools=TOOL_NAMES[:2])  # incomplete
    wanted = write_fake_llama_tools(root / "0.3.36-0123456789ab" / "bin")
    on_path = write_fake_llama_tools(tmp_path / "on-path")
    found = find_llama_tools(environ={"PATH": str(on_path)}, bindings_version="0.3.36")
    assert (found.source, found.where) == ("cache", str(wanted))
    assert found.tools["llama-perplexity"].path == wanted / "llama-perplexity"
    assert found.manifest is not None
    assert found.manifest.bindings_version == "0.3.36"


def test_path_is_the_last_resort(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    on_path = tmp_path / "on-path"
    write_fake_llama_tool(on_path, "llama-server", version="version: 5000 (abcdef1)")
    found = find_llama_tools(environ={"PATH": f"{tmp_path / 'empty'}:{on_path}"}, bindings_version="0.3.36")
    assert found.source == "PATH"
    assert list(found.tools) == ["llama-server"]
    assert found.tools["llama-server"].version_line == "version: 5000 (abcdef1)"
    assert found.manifest is None
    with pytest.raises(LlamaToolError, match="llama-quantize not found") as error:
        found.require("llama-quantize")
    assert str(error.value).endswith(f"build llama.cpp's tools with: {INSTALL_COMMAND}")
    assert "llama-tools/0.3.36-*/bin and PATH" in str(error.value)


def test_a_tool_that_does_not_run_keeps_its_exit_status_and_stderr_tail(tmp_path):
    env_dir = tmp_path / "mine"
    write_fake_llama_tool(env_dir, "llama-quantize", version="Illegal instruction", status=132)
    tool = find_llama_tools(environ={"QUANTGATE_LLAMA_TOOLS": str(env_dir)}).tools["llama-quantize"]
    assert tool.version is None
    assert tool.problem == "exit status 132: warming up | Illegal instruction"
    assert tool.version_line == "does not run: exit status 132: warming up | Illegal instruction"


def test_a_tool_without_version_option_runs_when_it_prints_its_usage(tmp_path):
    env_dir = tmp_path / "mine"
    quantize = env_dir / "llama-quantize"
    write_fake_llama_tool(env_dir, "llama-quantize")
    quantize.write_text("#!/bin/sh\necho 'usage: llama-quantize [--help]'\nexit 1\n", encoding="utf-8")
    tool = find_llama_tools(environ={"QUANTGATE_LLAMA_TOOLS": str(env_dir)}).tools["llama-quantize"]
    assert (tool.version, tool.problem) == (None, None)
    assert tool.version_line == "runs (it has no --version option)"


def test_a_damaged_manifest_is_named_with_its_field(tmp_path):
    env_dir = write_fake_llama_tools(tmp_path / "mine")
    (env_dir / "manifest.json").write_text(
        json.dumps(fake_llama_tools_manifest(build_seconds="long")), encoding="utf-8"
    )
    with pytest.raises(
        LlamaToolError, match=r"manifest\.json: build_seconds: Input should be a valid integer"
    ):
        find_llama_tools(environ={"QUANTGATE_LLAMA_TOOLS": str(env_dir)})


def test_the_real_build_runs_and_offers_what_calibration_needs():
    """The tools scripts/install-llama-tools.sh built (bash scripts/install.sh test builds them)."""
    found = find_llama_tools()
    if found.source != "cache" or found.missing:
        pytest.skip(f"llama.cpp's tools are not built for the installed bindings: run {INSTALL_COMMAND}")
    assert all(tool.problem is None for tool in found.tools.values()), found.tools
    assert found.tools["llama-server"].version_line.startswith("version: ")
    assert found.manifest is not None
    assert found.manifest.tools["llama-server"].startswith(found.tools["llama-server"].version_line)
    usage = subprocess.run(
        [str(found.require("llama-quantize")), "--help"], capture_output=True, text=True, timeout=60
    )
    assert "--imatrix" in usage.stdout + usage.stderr
    assert "Q4_K_M" in usage.stdout + usage.stderr
