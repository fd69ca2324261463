"""The machine and runtime a measurement was taken on, recorded with every run."""

from __future__ import annotations

import os
import platform
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil


@cache
def hardware() -> dict[str, Any]:
    """Host name, CPU model, core counts, RAM and OS of this machine."""
    cpu_model = platform.processor() or None
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "hostname": platform.node() or None,
        "cpu_model": cpu_model,
        "cpu_cores_logical": psutil.cpu_count(logical=True),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "machine": platform.machine(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "gpu": None,
    }


def physical_cores() -> int:
    """The machine's physical cores (logical ones when psutil cannot tell): llama.cpp's threads."""
    return psutil.cpu_count(logical=False) or os.cpu_count() or 1


def package_version(name: str) -> str | None:
    """Installed version of a distribution, None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
