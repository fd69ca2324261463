"""How a language writes numbers and dates, read from the CLDR data that babel ships.

`normalize` asks this module for a case's conventions (decimal and grouping symbols, month
and weekday names, whether an all-numeric date puts the day first) so that scoring reads
"1.234,56" in German, "1 234,56" in French and "3 mars 2024" the way the text's language
means them. Everything is looked up once per language and cached.

Why babel alone (and not dateparser for dates): numbers need babel anyway, and its CLDR
tables are all that dates need too, so one well-kept dependency covers both. The strict rules
in `normalize` apply that data, so a reading is refused rather than guessed: an unknown month,
a grouping the language does not write, a numeric date no order settles. dateparser
(measured, 1.5.0) picks an order for every numeric date, so `03/04/2024` with no language
is March 4 rather than ambiguous; it reads times and, unless fenced with settings, relative
dates; it brings regex, pytz and tzlocal; and it takes about 1 ms per date once warm and
20-160 ms for the first date of each language, where these tables take about 8 us per date
and 30 us per number (5-10 ms to build once per language). Scoring reads every number and
date field of every case of every variant, twice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from babel import Locale, UnknownLocaleError
from babel.dates import get_date_format, get_day_names, get_month_names
from babel.numbers import get_decimal_symbol, get_group_symbol

_WIDTHS: tuple[Literal["wide", "abbreviated"], ...] = ("wide", "abbreviated")
_CONTEXTS: tuple[Literal["format", "stand-alone"], ...] = ("format", "stand-alone")
_QUOTED_RE = re.compile(r"'[^']*'")


@dataclass(frozen=True, kw_only=True)
class Conventions:
    """What one language writes numbers and dates with.

    Attributes:
        locale: The babel locale identifier (`fr`, `de_CH`, `en_US`...).
        decimal: The decimal symbol (`,` in fr/de/es/pt/it, `.` in en and de_CH).
        group: The grouping symbol (`.` in de, a narrow no-break space in fr, `'` in de_CH).
        day_first: For all-numeric dates, True when the day comes before the month (fr, de,
            es, pt, it, en_GB), False when after (en, en_US), None when the locale puts the
            year first and so does not settle `03/04/2024`.
        months: Case-folded month names and abbreviations (without a trailing point, also
            without accents) to month numbers.
        weekdays: Case-folded weekday names and abbreviations, which a date may start with.
    """

    locale: str
    decimal: str
    group: str
    day_first: bool | None
    months: Mapping[str, int]
    weekdays: frozenset[str]


@lru_cache(maxsize=64)
def conventions(lang: str) -> Conventions | None:
    """The conventions of a language tag (`fr`, `de-CH`, `pt_BR`); None when babel does not know it."""
    try:
        locale = Locale.parse(lang.strip().replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return None
    return Conventions(
        locale=str(locale),
        decimal=get_decimal_symbol(locale),
        group=get_group_symbol(locale),
        day_first=_day_first(get_date_format("short", locale=locale).pattern),
        months=_month_table(locale),
        weekdays=frozenset(
            _key(name)
            for width in _WIDTHS
            for context in _CONTEXTS
            for name in get_day_names(width, context, locale).values()
        ),
    )


def _day_first(pattern: str) -> bool | None:
    fields = _QUOTED_RE.sub("", pattern)
    day, month, year = (fields.find(c) for c in "dMy")
    if min(day, month, year) < 0 or year < max(day, month):
        return None
    return day < month


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold().rstrip(".")


def fold_accents(text: str) -> str:
    """`text` without combining marks (`févr` -> `fevr`, `märz` -> `marz`)."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _month_table(locale: Locale) -> dict[str, int]:
    table: dict[str, int] = {}
    for width in _WIDTHS:
        for context in _CONTEXTS:
            for month, name in get_month_names(width, context, locale).items():
                table[_key(name)] = month
    for name, month in list(table.items()):
        table.setdefault(fold_accents(name), month)
    return table
