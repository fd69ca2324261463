"""Canonical forms of strings, numbers and dates, shared by scoring and the graph's normalize node.

Everything here is pure and total: a value that cannot be read returns `None`
rather than raising, so a malformed model output never stops a run.

Without a language, numbers and dates are read with the English and Spanish rules below
(separators guessed, ambiguous numeric dates refused). With one (`lang="fr"`, from the
case's `lang:fr` tag), that language's conventions decide, as CLDR records them and babel
reads them (`evaluators.language` says why babel and not dateparser): its decimal and
grouping symbols through `babel.numbers.parse_decimal(strict=True)`, its month and weekday
names, and its short date pattern for the day/month order of `03/04/2024`. The language's
reading wins whenever it is valid ("1.234" is 1234 in German, 1.234 in English; 03/04/2024
is 3 April in French, March 4 in US English). Only a text it cannot read at all is read the
other way, and then only if that reading is unambiguous and well formed ("1,234.56" in
German, 12/25/2024 in French); anything else is None.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any

from babel.numbers import NumberFormatError, parse_decimal

from evaluators.language import Conventions, conventions, fold_accents
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
# With a language: any letters for the month ("märz", "févr."), a point after the day ("3. März"),
# French/Portuguese/Italian ordinals ("1er", "1º", "1°") and "del" ("3 de marzo del 2024").
_LOCAL_DAY_MONTH_RE = re.compile(
    r"^(\d{1,2})(?:st|nd|rd|th|er|re|º|ª|°|o)?\.?(?:\s+de)?[\s\-.]+([^\W\d_]+)\.?"
    r"(?:\s+del?)?[\s\-,.]+(\d{2}|\d{4})$"
)
_LOCAL_MONTH_DAY_RE = re.compile(r"^([^\W\d_]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_LEADING_WORD_RE = re.compile(r"^([^\W\d_]+)\.?,?\s+")
_OTHER_DECIMAL = {".": ",", ",": "."}
# A locale for each decimal symbol's counterpart: point decimals with comma groups, and the reverse.
_OTHER_CONVENTION = {",": "en", ".": "de"}


def normalize_string(value: str) -> str:
    """NFC, case-folded, whitespace collapsed, trailing punctuation removed.

    A value made only of punctuation (an IPv6 `::`) is kept as it is rather than emptied.
    """
    text = unicodedata.normalize("NFC", value).casefold()
    text = _SPACE_RE.sub(" ", text).strip()
    return text.rstrip(_TRAILING_PUNCTUATION).strip() or text


def parse_number(value: Any, *, decimal_comma: bool | None = None, lang: str | None = None) -> float | None:
    """Read a number written in any common convention, or in the convention of `lang`.

    Args:
        value: A number, or a string such as ``"1.234,56 €"``, ``"$1,234.56"``, ``"USD 1 234"``.
        decimal_comma: True when the text's locale writes decimals with a comma (es), False
            when with a point (en), None to guess (a single separator followed by exactly three
            digits is then read as a thousands separator). When given, it wins over `lang`.
        lang: The text's language (``"de"``, ``"fr"``, ``"de-CH"``); its decimal and grouping
            symbols then decide (``"1.234"`` is 1234 in de, 1.234 in en); a text they cannot
            read is read with the other decimal symbol if it is well formed that way
            (``"1,234.56"`` in de), else it is unreadable. An unknown language is ignored.

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
    local = conventions(lang) if lang and decimal_comma is None else None
    if local is not None:
        number = _read_localized(digits, local)
    else:
        for space in _THOUSANDS_SPACES:
            digits = digits.replace(space, "")
        number = _read_separators(digits.rstrip(".,"), decimal_comma)
    if number is None:
        return None
    return -number if negative else number


def _read_localized(digits: str, local: Conventions) -> float | None:
    """Strict reading with the language's symbols, else with the other common convention.

    Spaces and apostrophes only ever group. Where the language groups with one of them (fr,
    pt-PT, de-CH), the other of `.`/`,` is taken as a grouping symbol too ("1.234,56" in fr),
    still checked by babel. The language's reading wins whenever it is valid ("1.234" is 1234
    in de); only a text it cannot read ("30.00", "1,234.56" in de; "1,5" in en) is read with
    the other decimal symbol, strictly too ("1,23,4" stays unreadable).
    """
    plain = digits
    for space in _THOUSANDS_SPACES:
        plain = plain.replace(space, "")
    plain = plain.rstrip(".,")
    text = plain
    if local.group in _THOUSANDS_SPACES:
        text = digits
        for space in _THOUSANDS_SPACES:
            text = text.replace(space, local.group)
        other = _OTHER_DECIMAL.get(local.decimal)
        text = text.rstrip(".,").replace(other, local.group) if other else text.rstrip(".,")
    readings = [(local.locale, text)]
    if local.decimal in _OTHER_CONVENTION:
        readings.append((_OTHER_CONVENTION[local.decimal], plain))
    for locale, candidate in readings:
        try:
            return float(parse_decimal(candidate, locale=locale, strict=True))
        except NumberFormatError:
            continue
    return None


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


def parse_date(value: Any, *, day_first: bool | None = None, lang: str | None = None) -> dt.date | None:
    """Read a date in ISO form or as commonly written in English or Spanish, or in `lang`.

    Args:
        value: ``"2024-03-03"``, ``"3 de marzo de 2024"``, ``"March 3rd, 2024"``, ``"03/04/2024"``...
        day_first: For all-numeric dates, True reads ``03/04/2024`` as 3 April (es, en-GB),
            False as March 4 (en-US); None accepts it only when unambiguous (or lets `lang`
            decide). When given, it wins over `lang`.
        lang: The text's language (``"fr"``, ``"de"``, ``"pt"``, ``"en-GB"``); its month and
            weekday names are then read (``"3. März 2024"``, ``"jeudi 14 mars 2024"``) and its
            short date pattern says whether ``03/04/2024`` puts the day first (a date that
            order makes impossible, ``12/25/2024`` in fr, is read only if unambiguous). An
            unknown language is ignored.

    Returns:
        The date, or None when the value is not a readable date.
    """
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        return None
    local = conventions(lang) if lang else None
    if local is not None:
        return _localized_date(value, local, day_first=day_first)
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


def _localized_date(value: str, local: Conventions, *, day_first: bool | None) -> dt.date | None:
    text = _SPACE_RE.sub(" ", unicodedata.normalize("NFC", value).strip().casefold())
    if (match := _LEADING_WORD_RE.match(text)) and match.group(1) in local.weekdays:
        text = text[match.end() :]
    try:
        if match := _ISO_RE.match(text):
            year, month, day = (int(g) for g in match.groups())
            return dt.date(year, month, day)
        if match := _NUMERIC_DATE_RE.match(text):
            if day_first is not None:
                return _numeric_date(*match.groups(), day_first=day_first)
            return _local_numeric_date(*match.groups(), day_first=local.day_first)
        if match := _LOCAL_DAY_MONTH_RE.match(text):
            day_s, month_name, year_s = match.groups()
            return _local_named_date(day_s, month_name, year_s, local)
        if match := _LOCAL_MONTH_DAY_RE.match(text):
            month_name, day_s, year_s = match.groups()
            return _local_named_date(day_s, month_name, year_s, local)
    except ValueError:
        return None
    return None


def _local_numeric_date(a: str, b: str, year_s: str, *, day_first: bool | None) -> dt.date | None:
    """The language's day/month order; a date impossible in it (12/25 in fr) is read if unambiguous."""
    if day_first is not None:
        try:
            return _numeric_date(a, b, year_s, day_first=day_first)
        except ValueError:
            pass
    return _numeric_date(a, b, year_s, day_first=None)


def _local_named_date(day_s: str, month_name: str, year_s: str, local: Conventions) -> dt.date | None:
    """The language's month names first, then the English and Spanish ones of `_MONTHS`."""
    for name in (month_name, fold_accents(month_name)):
        month = local.months.get(name) or _MONTHS.get(name)
        if month is not None:
            return dt.date(_year(year_s), month, int(day_s))
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


def normalize_record(spec: FieldSpec, record: Any, *, lang: str | None = None) -> Any:
    """Canonical values for a record, guided by its schema.

    Numeric strings in number/integer fields become numbers, readable dates in date fields
    become ISO `YYYY-MM-DD`, "true"/"false" strings in boolean fields become booleans, and
    blank strings become null. Anything unreadable is left as it is (scoring will judge it).
    With `lang`, numbers and dates are read in that language (see `parse_number`).
    """
    if spec.kind == "object":
        if not isinstance(record, dict):
            return record
        children = {child.leaf_name: child for child in spec.children}
        return {
            k: normalize_record(children[k], v, lang=lang) if k in children else v for k, v in record.items()
        }
    if spec.kind == "object_array":
        item = FieldSpec(name=spec.name, kind="object", children=spec.children)
        return [normalize_record(item, v, lang=lang) for v in record] if isinstance(record, list) else record
    if spec.kind == "scalar_array":
        assert spec.item_kind is not None
        scalar = FieldSpec(name=spec.name, kind=spec.item_kind)
        return (
            [normalize_record(scalar, v, lang=lang) for v in record] if isinstance(record, list) else record
        )
    return _normalize_scalar(spec.kind, record, lang=lang)


def _normalize_scalar(kind: str, value: Any, *, lang: str | None) -> Any:
    if isinstance(value, str) and not value.strip():
        return None
    if not isinstance(value, str):
        return value
    if kind in ("number", "integer"):
        number = parse_number(value, lang=lang)
        if number is None:
            return value
        return int(number) if kind == "integer" and number.is_integer() else number
    if kind == "date":
        date = parse_date(value, lang=lang)
        return date.isoformat() if date else value
    if kind == "boolean" and value.strip().casefold() in ("true", "false"):
        return value.strip().casefold() == "true"
    return value
