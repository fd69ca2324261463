"""How quantgate shows numbers and text: one place for every table, report and message.

The lowest layer: it imports nothing from quantgate, so any module may use it. Each function
shows a figure that was not measured (None) as `MISSING`. `terminal_text` makes a user's
string (a case id, a name, a message quoting them) safe to print on a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

MISSING = "—"
"""A figure that was not measured."""

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_IN_LINES = re.compile(f"[{_CONTROLS}]")
_UNSAFE = re.compile(f"[\t\n{_CONTROLS}]")


def terminal_text(text: object, *, lines: bool = False) -> str:
    """`text` safe to print on a terminal: each control character as its escape (`\\x1b`).

    A case id or a name from a user's file could otherwise clear the screen, move the cursor
    over earlier lines or set the window title (ESC, CSI, BEL), turn the text around (bidi
    controls) or stop the print (a lone surrogate cannot be encoded).

    Args:
        text: Anything; its `str`.
        lines: Keep line breaks and tabs (a multi-line message); otherwise they are escaped
            too, as they break a table's row or a one-line message.

    Returns:
        E.g. `"a\\x1b[2Jb"` for `"a\x1b[2Jb"`.
    """
    pattern = _UNSAFE_IN_LINES if lines else _UNSAFE
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


class Interval(Protocol):
    """Anything with a lower and an upper bound (e.g. `evaluators.statistics.Interval`)."""

    @property
    def low(self) -> float:
        """Lower bound."""
        ...

    @property
    def high(self) -> float:
        """Upper bound."""
        ...


def points(value: float | None, suffix: str = "") -> str:
    """A fraction as signed percentage points with one decimal.

    Args:
        value: A fraction (0.0123 is 1.23 points), or None.
        suffix: Text after the number, e.g. `" pts"`.

    Returns:
        E.g. `"+1.2"` (`"+1.2 pts"` with `suffix=" pts"`); `MISSING` for None.
    """
    return MISSING if value is None else f"{value * 100:+.1f}{suffix}"


def interval_points(interval: Interval | Mapping[str, float] | None) -> str:
    """A confidence interval of fractions as `[low, high]` in signed points.

    Args:
        interval: An object with `low` and `high`, or a mapping with those keys, or None.

    Returns:
        E.g. `"[-1.5, +2.0]"`; `MISSING` for None or an empty mapping.
    """
    if not interval:
        return MISSING
    if isinstance(interval, Mapping):
        low, high = interval["low"], interval["high"]
    else:
        low, high = interval.low, interval.high
    return f"[{points(low)}, {points(high)}]"


def percent(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage.

    Args:
        value: A fraction (0.5 is 50%), or None.
        digits: Decimals after the point.

    Returns:
        E.g. `"97.5%"` (`"98%"` with `digits=0`); `MISSING` for None.
    """
    return MISSING if value is None else f"{value:.{digits}%}"


def number(value: Any, template: str = "{:.3g}") -> str:
    """A value through a `str.format` template.

    Args:
        value: Any value the template accepts, or None.
        template: E.g. `"{:.4f}"` or `"{:.0f} MiB"`; default three significant digits.

    Returns:
        E.g. `"0.0123"` for 0.012345 with the default; `MISSING` for None.
    """
    return MISSING if value is None else template.format(value)


def fixed(value: float | None, digits: int = 2, *, scale: float = 1.0) -> str:
    """A number with a fixed count of decimals, after scaling.

    Args:
        value: The number, or None.
        digits: Decimals after the point.
        scale: Factor applied first (1000 shows seconds as milliseconds).

    Returns:
        E.g. `"0.12"` for 0.123; `MISSING` for None.
    """
    return MISSING if value is None else f"{value * scale:.{digits}f}"


def figure(value: Any) -> str:
    """A figure of any kind: a float with four significant digits, anything else as `str`.

    Args:
        value: A float, an int, a string, or None.

    Returns:
        E.g. `"0.1235"` for 0.123456, `"12"` for 12; `MISSING` for None.
    """
    if value is None:
        return MISSING
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def compact(value: float) -> str:
    """A number short enough for a status line: whole from 1000 up, else three significant digits.

    Args:
        value: The number.

    Returns:
        E.g. `"1234"` for 1234.4, `"0.0123"` for 0.012345, `"2.5"` for 2.5.
    """
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def text_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows (the first a header) as fixed-width text lines, the header underlined; each cell
    through `terminal_text`."""
    rows = [[terminal_text(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return lines
