"""The documentation: every relative link in README.md and docs/*.md resolves, every page is in the
site's navigation, and the MkDocs site builds in strict mode."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
NAV_PAGE = re.compile(r"^\s*-\s*(?:[^:]+:\s*)?([\w./-]+\.md)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Link:
    source: Path
    line: int
    target: str


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def prose_lines(path: Path, *, blank_code: bool = True) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1, with code spans blanked out
    (unless `blank_code` is False: headings keep theirs, GitHub's anchors include their text)."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
        else:
            lines.append((number, CODE_SPAN.sub("code", line) if blank_code else line))
    return lines


def links(path: Path) -> list[Link]:
    found: list[Link] = []
    for number, line in prose_lines(path):
        targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
        targets += [m.group(1) for m in REFERENCE_DEFINITION.finditer(line)]
        found += [Link(path, number, target) for target in targets]
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading (MkDocs' own anchors are checked by its strict build)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 ... for repeated headings."""
    seen: Counter[str] = Counter()
    result: set[str] = set()
    for _, line in prose_lines(path, blank_code=False):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        result.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return result


def problem(link: Link) -> str | None:
    """Why a link does not resolve, or None when it does (or is not a relative link)."""
    target = link.target
    if SCHEME.match(target):
        return None
    path_part, _, anchor = target.partition("#")
    path_part = path_part.split("?", 1)[0]
    if not path_part:
        if anchor and anchor not in anchors(link.source):
            return f"no heading for #{anchor} in this file"
        return None
    if path_part.startswith("/"):
        return "absolute path: make it relative to the file"
    resolved = (link.source.parent / path_part).resolve()
    if not resolved.exists():
        return f"{resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved} does not exist"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"no heading for #{anchor} in {resolved.relative_to(ROOT)}"
    return None


def test_markdown_files_are_found():
    assert (ROOT / "README.md").is_file()
    assert len(markdown_files()) > 10, "docs/ should hold one page per topic"


def test_every_relative_link_resolves():
    broken = [
        f"{link.source.relative_to(ROOT)}:{link.line}: ({link.target}): {reason}"
        for path in markdown_files()
        for link in links(path)
        if (reason := problem(link)) is not None
    ]
    assert not broken, f"{len(broken)} broken link(s):\n" + "\n".join(broken)


def test_the_link_checker_sees_broken_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A `code` heading\n\n"
        "[ok](#title) [ok](#a-code-heading) [bad](#nowhere) [bad](missing.md) [web](https://example.org)\n"
        "`[not a link](missing-too.md)`\n\n```md\n[not a link](in-a-fence.md)\n# not a heading\n```\n",
        encoding="utf-8",
    )
    found = links(page)
    assert [link.target for link in found] == [
        "#title",
        "#a-code-heading",
        "#nowhere",
        "missing.md",
        "https://example.org",
    ]
    assert [problem(link) is None for link in found] == [True, True, False, False, True]
    assert anchors(page) == {"title", "a-code-heading"}


def test_every_docs_page_is_in_the_nav_and_linked_from_the_readme():
    nav = set(NAV_PAGE.findall(MKDOCS_YML.read_text(encoding="utf-8")))
    pages = {path.name for path in DOCS.glob("*.md")}
    assert pages - nav == set(), "pages missing from the nav of mkdocs.yml"
    assert nav - pages == set(), "nav entries without a page"
    readme_targets = {link.target.partition("#")[0] for link in links(ROOT / "README.md")}
    assert {f"docs/{page}" for page in pages} - readme_targets == set(), "pages the README does not link to"


def test_mkdocs_builds_strictly(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install mkdocs mkdocs-material)")
    site = tmp_path / "site"
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--config-file", str(MKDOCS_YML), "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 and "Unrecognised theme name: 'material'" in result.stderr:
        pytest.skip("mkdocs-material is not installed (pip install mkdocs-material)")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "index.html").is_file()
    assert (site / "architecture" / "index.html").is_file()
