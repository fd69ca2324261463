"""quantgate._formatting: the exact text of each figure."""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import quantgate._formatting
from quantgate._formatting import (
    MISSING,
    compact,
    figure,
    fixed,
    interval_points,
    number,
    percent,
    points,
    terminal_text,
    text_table,
)


@dataclass(frozen=True)
class _Interval:
    low: float
    high: float


def test_missing_is_an_em_dash():
    assert MISSING == "—"


def test_points():
    assert points(0.0123) == "+1.2"
    assert points(-0.05) == "-5.0"
    assert points(0.0) == "+0.0"
    assert points(0.0123, " pts") == "+1.2 pts"
    assert points(None) == "—"


def test_interval_points():
    assert interval_points({"low": -0.015, "high": 0.02}) == "[-1.5, +2.0]"
    assert interval_points(_Interval(low=-0.1, high=0.0)) == "[-10.0, +0.0]"
    assert interval_points(None) == "—"
    assert interval_points({}) == "—"


def test_percent():
    assert percent(0.975) == "97.5%"
    assert percent(0.975, 0) == "98%"
    assert percent(1.0, 0) == "100%"
    assert percent(None) == "—"


def test_number():
    assert number(0.012345) == "0.0123"
    assert number(2 * 0.5**12) == "0.000488"
    assert number(0.123456, "{:.4f}") == "0.1235"
    assert number(412.4, "{:.0f} MiB") == "412 MiB"
    assert number(0.05, "{:+.1%}") == "+5.0%"
    assert number(3, "{}") == "3"
    assert number(None, "{:.0f}") == "—"


def test_fixed():
    assert fixed(0.1234) == "0.12"
    assert fixed(0.0421, 1, scale=1000) == "42.1"
    assert fixed(512.6, 0) == "513"
    assert fixed(None) == "—"


def test_figure():
    assert figure(0.123456) == "0.1235"
    assert figure(12) == "12"
    assert figure("ok") == "ok"
    assert figure(None) == "—"


@pytest.mark.parametrize(
    ("value", "text"),
    [(1234.4, "1234"), (-2500.0, "-2500"), (0.012345, "0.0123"), (2.5, "2.5"), (999.6, "1e+03")],
)
def test_compact(value, text):
    assert compact(value) == text


def test_formatting_imports_nothing_from_quantgate():
    tree = ast.parse(Path(quantgate._formatting.__file__).read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "typing" in imported
    assert not [name for name in imported if name.split(".")[0] in ("quantgate", "graphs", "evaluators")]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("c1\x1b[2J\x1b]0;owned\x07", "c1\\x1b[2J\\x1b]0;owned\\x07"),  # clear screen, window title, bell
        ("a\rb\nc\td", "a\\rb\\nc\\td"),  # a line break or tab breaks a table's row
        ("\x9b31m\x7f", "\\x9b31m\\x7f"),  # C1 control (8-bit CSI), DEL
        ("abc\u202edef\u2066", "abc\\u202edef\\u2066"),  # bidi overrides turn the text around
        ("lone \ud800", "lone \\ud800"),  # a lone surrogate cannot even be printed
        ("Größe 日本 — ok", "Größe 日本 — ok"),  # printable text is left as it is
    ],
)
def test_terminal_text_escapes_control_characters(text, shown):
    assert terminal_text(text) == shown
    shown.encode("utf-8")  # printable, whatever the terminal's encoding of Unicode


def test_terminal_text_can_keep_line_breaks_and_tabs():
    assert terminal_text("one\n\ttwo\x1b[A\r", lines=True) == "one\n\ttwo\\x1b[A\\r"


def test_text_table_escapes_every_cell():
    lines = text_table([["variant", "case"], ["Q4\x1b[2J", "c\n1"]])
    assert lines[2] == "Q4\\x1b[2J  c\\n1"
    assert "\x1b" not in "".join(lines)
