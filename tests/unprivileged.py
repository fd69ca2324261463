"""Tests marked `unprivileged` check a refusal of a path the user may not write or read, which root
(and so CI, which runs as root) would otherwise bypass: as root, such a test runs again in a pytest
of its own under `setpriv`, without the capabilities that let root ignore file permissions."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

MARKER = "unprivileged"
DROPPED_CAPABILITIES = "-dac_override,-dac_read_search,-fowner"
"""Write and search anything, read anything, chmod anything: what makes root ignore a file's mode."""


def file_permissions_bind() -> bool:
    """Whether this process is refused a directory of mode 0o500 (False for root with its capabilities)."""
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, 0o500)
        try:
            return not os.access(directory, os.W_OK)
        finally:
            os.chmod(directory, 0o700)


def run_without_privileges(item: pytest.Item) -> None:
    """Run the test `item` again in a child pytest whose file permissions bind; fail unless it passed
    there (a skip or a failure in the child fails this test, with the child's output)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail(
            f"{item.nodeid} runs as root and needs setpriv (util-linux) to drop root's file privileges"
        )
    drop = f"--inh-caps={DROPPED_CAPABILITIES}", f"--bounding-set={DROPPED_CAPABILITIES}"
    command = [setpriv, *drop, sys.executable, "-m", "pytest", item.nodeid, "-q", "-p", "no:randomly"]
    child = subprocess.run(
        command, cwd=item.config.rootpath, capture_output=True, text=True, timeout=300, check=False
    )
    output = child.stdout + child.stderr
    if child.returncode != 0 or not re.search(r"\b1 passed\b", output) or "skipped" in output:
        pytest.fail(f"{item.nodeid} without root's file privileges (setpriv) did not pass:\n{output}")
