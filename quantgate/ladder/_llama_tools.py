"""llama.cpp's own tools (llama-quantize, llama-imatrix, llama-perplexity, llama-server): where they are
and which llama.cpp they were built from.

`scripts/install-llama-tools.sh` builds them from the llama.cpp that the installed llama-cpp-python
vendors, into `<user cache>/quantgate/llama-tools/<bindings version>-<flags hash>/bin/`, with a
`manifest.json` beside them (`LlamaToolsManifest`). They are looked for, in order:

1. `$QUANTGATE_LLAMA_TOOLS`, a bin directory (any llama.cpp build; a manifest there is read too);
2. the cache, for the installed bindings' version (the newest build when there are several flags);
3. `PATH`.

The tools built from the sdist print "version: 0 (unknown)" (it has no git history): the manifest's
`bindings_version` is what says which llama.cpp they are.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, ValidationError

from evaluators.errors import UsageError
from quantgate._hardware import package_version

TOOL_NAMES = ("llama-quantize", "llama-imatrix", "llama-perplexity", "llama-server")
"""The tools the install script builds, in its order."""
ENV_VAR = "QUANTGATE_LLAMA_TOOLS"
MANIFEST_FILE = "manifest.json"
INSTALL_COMMAND = "bash scripts/install-llama-tools.sh"
_VERSION_TIMEOUT_S = 30.0


class LlamaToolError(UsageError, FileNotFoundError):
    """A llama.cpp tool is missing, or its directory or manifest is unusable; the message says what to run."""


class LlamaToolsManifest(BaseModel):
    """`manifest.json` beside the tools, written by `scripts/install-llama-tools.sh`."""

    model_config = ConfigDict(frozen=True)

    format_version: Literal[1]
    bindings_version: str
    """llama-cpp-python's version whose vendored llama.cpp the tools were built from."""
    sdist_sha256: str
    cmake_flags: list[str]
    build_seconds: int
    """Wall time of the configure and build steps."""
    tools: dict[str, str]
    """Each tool's `--version` output at build time."""


@dataclass(frozen=True, kw_only=True)
class LlamaTool:
    """One tool found: where, what its `--version` printed, and `problem` when it did not run."""

    name: str
    path: Path
    version: str | None
    """`--version`'s output; None for a tool without that option (llama-quantize prints its usage)."""
    problem: str | None = None

    @property
    def version_line(self) -> str:
        """llama.cpp's "version: N (commit)" line, or what stands in for it."""
        if self.problem is not None:
            return f"does not run: {self.problem}"
        if self.version is None:
            return "runs (it has no --version option)"
        lines = self.version.splitlines()
        return next((line for line in lines if line.startswith("version:")), lines[0] if lines else "")


Source = Literal["env", "cache", "PATH"]


@dataclass(frozen=True, kw_only=True)
class LlamaTools:
    """The tools found, where they were looked for, and the manifest of their build when there is one."""

    source: Source
    where: str
    """Where they were looked for: the bin directory (env, cache), or the cache's pattern and PATH."""
    tools: Mapping[str, LlamaTool]
    manifest: LlamaToolsManifest | None

    @property
    def missing(self) -> list[str]:
        """The tools of `TOOL_NAMES` not found."""
        return [name for name in TOOL_NAMES if name not in self.tools]

    def require(self, name: str) -> Path:
        """The path of tool `name`; a `LlamaToolError` naming what to run when it is not there."""
        if name in self.tools:
            return self.tools[name].path
        raise LlamaToolError(f"{name} not found (looked in {self.where}); {_how_to_get_it(self.source)}")


def _how_to_get_it(source: Source) -> str:
    if source == "env":
        return f"put it in ${ENV_VAR}, or unset {ENV_VAR} and run: {INSTALL_COMMAND}"
    return f"build llama.cpp's tools with: {INSTALL_COMMAND}"


def tools_cache_root() -> Path:
    """Where `scripts/install-llama-tools.sh` builds: `${XDG_CACHE_HOME:-~/.cache}/quantgate/llama-tools`."""
    return platformdirs.user_cache_path("quantgate") / "llama-tools"


def cached_bin_dir(bindings_version: str, root: Path | None = None) -> Path | None:
    """The newest complete cached build for `bindings_version` (its bin directory), None when none is."""
    builds = [
        path.parent
        for path in (root or tools_cache_root()).glob(f"{bindings_version}-*/bin/{MANIFEST_FILE}")
        if all((path.parent / name).is_file() for name in TOOL_NAMES)
    ]
    return max(builds, key=lambda b: (b / MANIFEST_FILE).stat().st_mtime, default=None)


def read_manifest(directory: Path) -> LlamaToolsManifest | None:
    """The manifest in bin directory `directory`, None when there is none."""
    path = directory / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        return LlamaToolsManifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "(top level)"
        raise LlamaToolError(f"{path}: {where}: {problem['msg']}; rebuild with: {INSTALL_COMMAND}") from None


def tool_version(path: Path) -> LlamaTool:
    """Run `path --version` (llama.cpp prints it on stderr) and keep what it printed.

    llama-quantize has no `--version`: it prints its usage and exits 1, which shows that it runs.
    """
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_VERSION_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return LlamaTool(name=path.name, path=path, version=None, problem=str(exc))
    output = (done.stdout + done.stderr).strip()
    if done.returncode == 1 and output.startswith("usage:"):
        return LlamaTool(name=path.name, path=path, version=None)
    if done.returncode != 0:
        tail = " | ".join(output.splitlines()[-3:]) or "no output"
        problem = f"exit status {done.returncode}: {tail}"
        return LlamaTool(name=path.name, path=path, version=None, problem=problem)
    return LlamaTool(name=path.name, path=path, version=output)


def _in_directory(directory: Path) -> dict[str, LlamaTool]:
    found = [directory / name for name in TOOL_NAMES]
    return {path.name: tool_version(path) for path in found if path.is_file() and os.access(path, os.X_OK)}


def find_llama_tools(
    *, environ: Mapping[str, str] | None = None, bindings_version: str | None = None
) -> LlamaTools:
    """Find llama.cpp's tools: `$QUANTGATE_LLAMA_TOOLS`, else the cache for the bindings, else PATH.

    Args:
        environ: the environment to read (default `os.environ`).
        bindings_version: llama-cpp-python's version whose cached build to use (default: the installed one).

    Raises:
        LlamaToolError: `$QUANTGATE_LLAMA_TOOLS` is not a directory, or a manifest is unreadable.
    """
    environ = os.environ if environ is None else environ
    if environ.get(ENV_VAR):
        directory = Path(environ[ENV_VAR]).expanduser()
        if not directory.is_dir():
            raise LlamaToolError(f"{ENV_VAR}={directory} is not a directory; {_how_to_get_it('env')}")
        return LlamaTools(
            source="env",
            where=str(directory),
            tools=_in_directory(directory),
            manifest=read_manifest(directory),
        )
    version = bindings_version or package_version("llama-cpp-python")
    cached = cached_bin_dir(version) if version else None
    if cached is not None:
        return LlamaTools(
            source="cache", where=str(cached), tools=_in_directory(cached), manifest=read_manifest(cached)
        )
    on_path = [Path(found) for name in TOOL_NAMES if (found := shutil.which(name, path=environ.get("PATH")))]
    tools = {path.name: tool_version(path) for path in on_path}
    manifest = read_manifest(on_path[0].parent) if on_path else None
    where = f"{tools_cache_root()}/{version or '<llama-cpp-python not installed>'}-*/bin and PATH"
    return LlamaTools(source="PATH", where=where, tools=tools, manifest=manifest)


def llama_tool(name: str) -> Path:
    """The path of llama.cpp tool `name` (one of `TOOL_NAMES`), found as `find_llama_tools` does."""
    return find_llama_tools().require(name)
