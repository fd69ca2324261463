"""Opening a report in headless Chromium: a screenshot that is not blank, every chart decoded."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

CHARTS = ["accuracy_memory.png", "field_deltas.png", "latency.png", "slices.png"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a throwaway profile and no background network traffic."""
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def assert_renders_in_chromium(page: Path, tmp_path: Path) -> None:
    """A headless Chromium screenshot is not blank, and every chart image decoded (naturalWidth > 0)."""
    from PIL import Image, ImageStat

    shot = tmp_path / "screenshot.png"
    result = chromium(
        f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri(), profile=tmp_path / "p1"
    )
    assert shot.is_file(), result.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1280, 2000)
        stat = ImageStat.Stat(image.convert("L"))
        assert stat.stddev[0] > 10, "the screenshot is blank"
        assert (
            len(image.convert("L").getcolors(maxcolors=1 << 16) or []) > 50
        )  # text and charts, not a flat page
    dom = chromium("--virtual-time-budget=10000", "--dump-dom", page.as_uri(), profile=tmp_path / "p2").stdout
    drawn = re.search(r'data-charts-drawn="(\d+)/(\d+)"', dom)
    assert drawn is not None, dom[:500]
    assert drawn.group(1) == drawn.group(2) == str(len(CHARTS))
    assert '<p id="chart-status" class="fail"></p>' in dom  # no "chart(s) could not be drawn" message
    assert re.search(r'id="failure-count"[^>]*>\d+ of \d+ shown<', dom)  # the filter script ran
