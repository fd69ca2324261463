"""scripts/install-llama-tools.sh with a fake cmake and a fake sdist (no real build): the manifest, the
cache that a second run finds, and nothing half-built after a failed or interrupted build."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from quantgate.ladder import find_llama_tools

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-llama-tools.sh"
BINDINGS = version("llama-cpp-python")

FAKE_CMAKE = """#!/bin/sh
# configure: checks the source; --build: fails, hangs or writes fake tools into <build>/bin
echo "$*" >> "$FAKE_CMAKE_CALLS"
if [ "$1" = "--build" ]; then
  [ -z "$FAKE_CMAKE_FAIL" ] || { echo "fake compiler error" >&2; exit 2; }
  [ -z "$FAKE_CMAKE_HANG" ] || { touch "$FAKE_CMAKE_HANG"; exec sleep 60; }
  mkdir -p "$2/bin"
  for t in llama-imatrix llama-perplexity llama-server; do
    printf '#!/bin/sh\\necho "version: 0 (unknown)" >&2\\necho "built with fake" >&2\\n' > "$2/bin/$t"
    chmod +x "$2/bin/$t"
  done
  printf '#!/bin/sh\\necho "usage: llama-quantize [--help]"\\nexit 1\\n' > "$2/bin/llama-quantize"
  chmod +x "$2/bin/llama-quantize"
  exit 0
fi
[ -f "$2/CMakeLists.txt" ] || { echo "no CMakeLists.txt in $2" >&2; exit 1; }
"""


@pytest.fixture
def fake_env(tmp_path: Path) -> dict[str, str]:
    """A run's environment: a fake cmake first on PATH, a fake sdist, the cache and TMPDIR in tmp_path."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "cmake").write_text(FAKE_CMAKE, encoding="utf-8")
    (bin_dir / "cmake").chmod(0o755)
    source = tmp_path / "sdist" / f"llama_cpp_python-{BINDINGS}" / "vendor" / "llama.cpp"
    source.mkdir(parents=True)
    (source / "CMakeLists.txt").write_text("project(llama.cpp)\n", encoding="utf-8")
    sdist = tmp_path / f"llama_cpp_python-{BINDINGS}.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(source.parents[1], arcname=f"llama_cpp_python-{BINDINGS}")
    (tmp_path / "tmp").mkdir()
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHON": sys.executable,
        "LLAMA_CPP_SDIST": str(sdist),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path / "tmp"),
        "CMAKE_ARGS": '-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8"',
        "FAKE_CMAKE_CALLS": str(tmp_path / "cmake-calls"),
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)


def _nothing_left(env: dict[str, str]) -> None:
    root = Path(env["XDG_CACHE_HOME"]) / "quantgate" / "llama-tools"
    assert not root.exists() or list(root.iterdir()) == []
    assert list(Path(env["TMPDIR"]).iterdir()) == []


def test_a_build_writes_the_manifest_and_a_second_run_finds_it(fake_env, monkeypatch):
    bin_dir = Path(_run(fake_env, "--print-dir").stdout.strip())
    assert bin_dir.parent.parent == Path(fake_env["XDG_CACHE_HOME"]) / "quantgate" / "llama-tools"
    assert bin_dir.parent.name.startswith(f"{BINDINGS}-")
    first = _run(fake_env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == str(bin_dir)
    manifest = json.loads((bin_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["bindings_version"] == BINDINGS
    sdist = Path(fake_env["LLAMA_CPP_SDIST"]).read_bytes()
    assert manifest["sdist_sha256"] == hashlib.sha256(sdist).hexdigest()
    assert manifest["cmake_flags"][0] == "-DCMAKE_BUILD_TYPE=Release"
    assert manifest["cmake_flags"][-1] == "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8"
    assert manifest["tools"]["llama-server"] == "version: 0 (unknown)\nbuilt with fake"
    assert manifest["tools"]["llama-quantize"] == "no --version option (it printed its usage)"
    calls = Path(fake_env["FAKE_CMAKE_CALLS"]).read_text(encoding="utf-8").splitlines()
    assert len(calls) == 2
    assert "--target llama-quantize llama-imatrix llama-perplexity llama-server" in calls[1]
    second = _run(fake_env)
    assert second.returncode == 0, second.stderr
    assert "already built" in second.stdout
    assert second.stdout.splitlines()[-1] == str(bin_dir)
    assert len(Path(fake_env["FAKE_CMAKE_CALLS"]).read_text(encoding="utf-8").splitlines()) == 2
    monkeypatch.setenv("XDG_CACHE_HOME", fake_env["XDG_CACHE_HOME"])
    found = find_llama_tools(environ={"PATH": ""}, bindings_version=BINDINGS)
    assert (found.source, found.where, found.missing) == ("cache", str(bin_dir), [])


def test_other_cmake_flags_are_another_build(fake_env):
    first = Path(_run(fake_env, "--print-dir").stdout.strip())
    other = Path(_run({**fake_env, "CMAKE_ARGS": "-DGGML_NATIVE=OFF"}, "--print-dir").stdout.strip())
    assert first.parent.name != other.parent.name
    assert other.parent.name.startswith(f"{BINDINGS}-")


def test_a_failed_build_says_why_and_leaves_nothing(fake_env):
    failed = _run({**fake_env, "FAKE_CMAKE_FAIL": "1"})
    assert failed.returncode == 1
    assert "fake compiler error" in failed.stderr
    assert "error: step 3: the build failed" in failed.stderr
    _nothing_left(fake_env)


def test_an_interrupted_build_leaves_nothing(fake_env, tmp_path):
    started = tmp_path / "build-started"
    env = {**fake_env, "FAKE_CMAKE_HANG": str(started)}
    process = subprocess.Popen(
        ["bash", str(SCRIPT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert started.exists(), process.communicate()
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait(timeout=30) == 143
    _nothing_left(fake_env)


def test_an_sdist_of_another_version_is_refused(fake_env, tmp_path):
    other = tmp_path / "llama_cpp_python-0.0.1.tar.gz"
    other.write_bytes(b"")
    refused = _run({**fake_env, "LLAMA_CPP_SDIST": str(other)})
    assert refused.returncode == 1
    assert f"is not llama_cpp_python-{BINDINGS}.tar.gz" in refused.stderr
    _nothing_left(fake_env)


def test_an_unknown_argument_is_named(fake_env):
    refused = _run(fake_env, "--bogus")
    assert refused.returncode == 1
    assert "unknown argument '--bogus'" in refused.stderr


def test_without_the_bindings_it_says_to_install_first(fake_env, tmp_path):
    refused = _run({**fake_env, "PYTHON": str(tmp_path / "no-venv" / "python")})
    assert refused.returncode == 1
    assert refused.stderr.endswith("no-venv/python not found; run: bash scripts/install.sh\n")
    _nothing_left(fake_env)
