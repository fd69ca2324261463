"""Canonical forms of strings, numbers and dates, shared by scoring and the graph's normalize node.

Everything here is pure and total: a value that cannot be read returns `None`
rather than raising, so a malformed model output never stops a run.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any

from evaluators.schema import FieldSpec

_TRAILING_PUNCTUATION = ".,;:!?¡¿"
_SPACE_RE = re.compile(r"\s+")
_THOUSANDS_SPACES = "\u00a0\u202f\u2009 '\u2019"
_NUMBER_RE = re.compile(r"[-+(]?\s*\d[\d.,\u00a0\u202f\u2009 '\u2019]*")

_MONTHS = {
    "jan": 1, "january": 1, "ene": 1, "enero": 1,
    "feb": 2, "february": 2, "febrero": 2,
    "mar": 3, "march": 3, "marzo": 3,
    "apr": 4, "april": 4, "abr": 4, "abril": 4,
    "may": 5, "mayo": 5,
    "jun": 6, "june": 6, "junio": 6,
    "jul": 7, "july": 7, "julio": 7,
    "aug": 8, "august": 8, "ago": 8, "agosto": 8,
    "sep": 9, "sept": 9, "september": 9, "septiembre": 9, "setiembre": 9,
    "oct": 10, "october": 10, "octubre": 10,
    "nov": 11, "november": 11, "noviembre": 11,
    "dec": 12, "december": 12, "dic": 12, "diciembre": 12,
}  # fmt: skip
_ISO_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[t ].*)?$")
_NUMERIC_DATE_RE = re.compile(r"^(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{2}|\d{4})$")
_DAY_MONTH_RE = re.compile(
    r"^(\d{1,2})(?:st|nd|rd|th|º|o)?(?:\s+de)?[\s\-]+([a-z]+)\.?(?:\s+de)?[\s\-,]+(\d{2}|\d{4})$"
)
_MONTH_DAY_RE = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")


def normalize_string(value: str) -> str:
    """NFC, case-folded, whitespace collapsed, trailing punctuation removed.

    A value made only of punctuation (an IPv6 `::`) is kept as it is rather than emptied.
    """
    text = unicodedata.normalize("NFC", value).casefold()
    text = _SPACE_RE.sub(" ", text).strip()
    return text.rstrip(_TRAILING_PUNCTUATION).strip() or text


def parse_number(value: Any, *, decimal_comma: bool | None = None) -> float | None:
    """Read a number written in any common convention.

    Args:
        value: A number, or a string such as ``"1.234,56 €"``, ``"$1,234.56"``, ``"USD 1 234"``.
        decimal_comma: True when the text's locale writes decimals with a comma (es), False
            when with a point (en), None to guess (a single separator followed by exactly three
            digits is then read as a thousands separator).

    Returns:
        The value as a float, or None when no number can be read.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    match = _NUMBER_RE.search(value)
    if match is None:
        return None
    token = match.group(0).strip()
    negative = token.startswith(("-", "(")) or value.strip().startswith("-")
    digits = token.lstrip("-+(").strip()
    for space in _THOUSANDS_SPACES:
        digits = digits.replace(space, "")
    digits = digits.rstrip(".,")
    number = _read_separators(digits, decimal_comma)
    if number is None:
        return None
    return -number if negative else number


def _read_separators(digits: str, decimal_comma: bool | None) -> float | None:
    has_point, has_comma = "." in digits, "," in digits
    if has_point and has_comma:
        decimal = "," if digits.rfind(",") > digits.rfind(".") else "."
    elif has_point or has_comma:
        sep = "." if has_point else ","
        head, _, tail = digits.rpartition(sep)
        if digits.count(sep) > 1:
            decimal = ""
        elif decimal_comma is None:
            decimal = "" if len(tail) == 3 and head != "0" else sep
        else:
            decimal = "," if decimal_comma else "."
            if sep != decimal:
                decimal = ""
    else:
        decimal = ""
    thousands = {".", ","} - {decimal}
    for sep in thousands:
        digits = digits.replace(sep, "")
    if decimal:
        digits = digits.replace(decimal, ".")
    try:
        return float(digits)
    except ValueError:
        return None


def parse_date(value: Any, *, day_first: bool | None = None) -> dt.date | None:
    """Read a date in ISO form or as commonly written in English or Spanish.

    Args:
        value: ``"2024-03-03"``, ``"3 de marzo de 2024"``, ``"March 3rd, 2024"``, ``"03/04/2024"``...
        day_first: For all-numeric dates, True reads ``03/04/2024`` as 3 April (es, en-GB),
            False as March 4 (en-US); None accepts it only when unambiguous.

    Returns:
        The date, or None when the value is not a readable date.
    """
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        return None
    text = _SPACE_RE.sub(" ", value.strip().casefold())
    try:
        if match := _ISO_RE.match(text):
            year, month, day = (int(g) for g in match.groups())
            return dt.date(year, month, day)
        if match := _NUMERIC_DATE_RE.match(text):
            return _numeric_date(*match.groups(), day_first=day_first)
        if match := _DAY_MONTH_RE.match(text):
            day_s, month_name, year_s = match.groups()
            return _named_date(day_s, month_name, year_s)
        if match := _MONTH_DAY_RE.match(text):
            month_name, day_s, year_s = match.groups()
            return _named_date(day_s, month_name, year_s)
    except ValueError:
        return None
    return None


def _year(year_s: str) -> int:
    year = int(year_s)
    return year + 2000 if year < 100 else year


def _numeric_date(a: str, b: str, year_s: str, *, day_first: bool | None) -> dt.date | None:
    first, second = int(a), int(b)
    if day_first is None:
        if first > 12 >= second:
            day_first = True
        elif second > 12 >= first:
            day_first = False
        elif first == second:
            day_first = True
        else:
            return None
    day, month = (first, second) if day_first else (second, first)
    return dt.date(_year(year_s), month, day)


def _named_date(day_s: str, month_name: str, year_s: str) -> dt.date | None:
    month = _MONTHS.get(month_name)
    if month is None:
        return None
    return dt.date(_year(year_s), month, int(day_s))


def normalize_record(spec: FieldSpec, record: Any) -> Any:
    """Canonical values for a record, guided by its schema.

    Numeric strings in number/integer fields become numbers, readable dates in date fields
    become ISO `YYYY-MM-DD`, "true"/"false" strings in boolean fields become booleans, and
    blank strings become null. Anything unreadable is left as it is (scoring will judge it).
    """
    if spec.kind == "object":
        if not isinstance(record, dict):
            return record
        children = {child.leaf_name: child for child in spec.children}
        return {k: normalize_record(children[k], v) if k in children else v for k, v in record.items()}
    if spec.kind == "object_array":
        item = FieldSpec(name=spec.name, kind="object", children=spec.children)
        return [normalize_record(item, v) for v in record] if isinstance(record, list) else record
    if spec.kind == "scalar_array":
        assert spec.item_kind is not None
        scalar = FieldSpec(name=spec.name, kind=spec.item_kind)
        return [normalize_record(scalar, v) for v in record] if isinstance(record, list) else record
    return _normalize_scalar(spec.kind, record)


def _normalize_scalar(kind: str, value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        return None
    if not isinstance(value, str):
        return value
    if kind in ("number", "integer"):
        number = parse_number(value)
        if number is None:
            return value
        return int(number) if kind == "integer" and number.is_integer() else number
    if kind == "date":
        date = parse_date(value)
        return date.isoformat() if date else value
    if kind == "boolean" and value.strip().casefold() in ("true", "false"):
        return value.strip().casefold() == "true"
    return value
