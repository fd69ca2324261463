import datetime as dt

import pytest

from evaluators.normalize import normalize_record, normalize_string, parse_date, parse_number
from evaluators.schema import parse_schema


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Acme   Corp. ", "acme corp"),
        ("JOSÉ ÑÚÑEZ", "josé ñúñez"),
        ("Jose\u0301 N\u0303u\u0301n\u0303ez", "josé ñúñez"),  # decomposed accents -> NFC
        ("Zoë!", "zoë"),
        ("line\nbreak\tand  spaces;", "line break and spaces"),
        ("::", "::"),
        ("fd00:10::", "fd00:10"),
    ],
)
def test_normalize_string(text, expected):
    assert normalize_string(text) == expected


@pytest.mark.parametrize(
    ("text", "decimal_comma", "expected"),
    [
        ("1.234,56 €", None, 1234.56),
        ("1 234,56 EUR", None, 1234.56),
        ("$1,234.56", None, 1234.56),
        ("USD 1 234", None, 1234.0),
        ("CLP 45.990", None, 45990.0),
        ("€ 9,99", None, 9.99),
        ("MXN $12,500.00", None, 12500.0),
        ("1.234.567,89 €", None, 1234567.89),
        ("1,5", True, 1.5),
        ("1,500", True, 1.5),
        ("1,500", False, 1500.0),
        ("1.500", True, 1500.0),
        ("0.250", None, 0.25),
        ("-12.5", None, -12.5),
        ("(30.00)", None, -30.0),
        ("12\u00a0345,6", None, 12345.6),
        (21, None, 21.0),
        (3.5, None, 3.5),
    ],
)
def test_parse_number(text, decimal_comma, expected):
    assert parse_number(text, decimal_comma=decimal_comma) == pytest.approx(expected)


@pytest.mark.parametrize("value", ["abc", "", None, True, [1], "€"])
def test_parse_number_unreadable(value):
    assert parse_number(value) is None


@pytest.mark.parametrize(
    ("text", "day_first", "expected"),
    [
        ("2024-03-03", None, dt.date(2024, 3, 3)),
        ("2024-03-03T10:00:00Z", None, dt.date(2024, 3, 3)),
        ("3 de marzo de 2024", None, dt.date(2024, 3, 3)),
        ("14 de Septiembre de 2023", None, dt.date(2023, 9, 14)),
        ("12-ene-2025", None, dt.date(2025, 1, 12)),
        ("March 3rd, 2024", None, dt.date(2024, 3, 3)),
        ("3rd March 2024", None, dt.date(2024, 3, 3)),
        ("Dec. 1, 2023", None, dt.date(2023, 12, 1)),
        ("03/04/2024", True, dt.date(2024, 4, 3)),
        ("03/04/2024", False, dt.date(2024, 3, 4)),
        ("25/12/2024", None, dt.date(2024, 12, 25)),
        ("12/25/2024", None, dt.date(2024, 12, 25)),
        ("12/05/23", True, dt.date(2023, 5, 12)),
    ],
)
def test_parse_date(text, day_first, expected):
    assert parse_date(text, day_first=day_first) == expected


@pytest.mark.parametrize("value", ["03/04/2024", "2024-02-30", "31 de febrero de 2024", "soon", "", 2024])
def test_parse_date_ambiguous_or_invalid(value):
    assert parse_date(value) is None


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("1 234,56", "fr", 1234.56),
        ("1\u202f234,56 €", "fr", 1234.56),
        ("1.234,56 €", "fr", 1234.56),
        ("1.234,56 €", "de", 1234.56),
        ("1.234,56 €", "pt", 1234.56),
        ("1.234.567,89 €", "it", 1234567.89),
        ("12,5 %", "fr", 12.5),
        ("12,5 %", "de", 12.5),
        ("-1.234,5", "de", -1234.5),
        ("(30,00)", "fr", -30.0),
        ("1'234.5", "de-CH", 1234.5),
        ("1\u2019234.50 CHF", "de-CH", 1234.5),
        ("12\u00a0345,6", "pt-PT", 12345.6),
        ("1.234", "de", 1234.0),
        ("1.234", "es", 1234.0),
        ("1.234", "en", 1.234),
        ("1,234", "en", 1234.0),
        ("1,500", "de", 1.5),
        ("$1,234.56", "en", 1234.56),
        ("30.00", "de", 30.0),  # no German reading: the point is a decimal point
        ("1,234.56", "de", 1234.56),
        ("1,5", "en", 1.5),
    ],
)
def test_parse_number_in_the_case_language(text, lang, expected):
    assert parse_number(text, lang=lang) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "lang"), [("1,23,4", "en"), ("1.2.3", "de"), ("12 34,5", "fr"), ("€", "fr")]
)
def test_parse_number_refuses_what_no_convention_groups_that_way(text, lang):
    assert parse_number(text, lang=lang) is None


def test_language_decides_what_the_guess_cannot():
    assert parse_number("1,500") == 1500.0
    assert parse_number("1,500", lang="de") == 1.5
    assert parse_number("1,500", lang="en") == 1500.0
    assert parse_number("1.234", lang="en") != parse_number("1.234", lang="de")


def test_explicit_decimal_comma_wins_over_language():
    assert parse_number("1,500", lang="de", decimal_comma=False) == 1500.0


def test_unknown_language_keeps_the_language_free_rules():
    assert parse_number("1,500", lang="xx") == parse_number("1,500") == 1500.0
    assert parse_date("03/04/2024", lang="xx") is None
    assert parse_date("3 de marzo de 2024", lang="xx") == dt.date(2024, 3, 3)


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("3 mars 2024", "fr", dt.date(2024, 3, 3)),
        ("1er avril 2024", "fr", dt.date(2024, 4, 1)),
        ("3 févr. 2024", "fr", dt.date(2024, 2, 3)),
        ("3 fevrier 2024", "fr", dt.date(2024, 2, 3)),
        ("jeudi 14 mars 2024", "fr", dt.date(2024, 3, 14)),
        ("3. März 2024", "de", dt.date(2024, 3, 3)),
        ("3. Ma\u0308rz 2024", "de", dt.date(2024, 3, 3)),  # decomposed umlaut
        ("Donnerstag, 14. März 2024", "de", dt.date(2024, 3, 14)),
        ("3 Okt. 2024", "de", dt.date(2024, 10, 3)),
        ("15 de março de 2024", "pt", dt.date(2024, 3, 15)),
        ("1º de abril de 2024", "pt", dt.date(2024, 4, 1)),
        ("3 marzo 2024", "it", dt.date(2024, 3, 3)),
        ("1° aprile 2024", "it", dt.date(2024, 4, 1)),
        ("3 de marzo del 2024", "es", dt.date(2024, 3, 3)),
        ("14 de Septiembre de 2023", "es", dt.date(2023, 9, 14)),
        ("March 3rd, 2024", "en", dt.date(2024, 3, 3)),
        ("3 March 2024", "fr", dt.date(2024, 3, 3)),  # English month names are read in any language
        ("2024-03-03", "de", dt.date(2024, 3, 3)),
    ],
)
def test_parse_named_date_in_the_case_language(text, lang, expected):
    assert parse_date(text, lang=lang) == expected


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("03/04/2024", "fr", dt.date(2024, 4, 3)),
        ("03/04/2024", "es", dt.date(2024, 4, 3)),
        ("03/04/2024", "pt", dt.date(2024, 4, 3)),
        ("03/04/2024", "it", dt.date(2024, 4, 3)),
        ("03.04.2024", "de", dt.date(2024, 4, 3)),
        ("03/04/24", "de", dt.date(2024, 4, 3)),
        ("03/04/2024", "en", dt.date(2024, 3, 4)),
        ("03/04/2024", "en-US", dt.date(2024, 3, 4)),
        ("03/04/2024", "en-GB", dt.date(2024, 4, 3)),
        ("12/25/2024", "fr", dt.date(2024, 12, 25)),  # impossible day first, unambiguous otherwise
        ("25/12/2024", "en", dt.date(2024, 12, 25)),
    ],
)
def test_parse_numeric_date_in_the_case_language(text, lang, expected):
    assert parse_date(text, lang=lang) == expected


def test_numeric_date_stays_ambiguous_without_a_deciding_language():
    assert parse_date("03/04/2024") is None
    assert parse_date("03.04.2024") is None
    assert parse_date("03/04/2024", lang="ja") is None  # year-first locale: its pattern does not decide
    assert parse_date("03/04/2024", lang="fr", day_first=False) == dt.date(2024, 3, 4)


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("31 février 2024", "fr"),
        ("3 mars", "fr"),
        ("3 mars 2024", "de"),  # a French month is not German
        ("hier", "fr"),
        ("13/13/2024", "fr"),
        ("3 foo 2024", "it"),
    ],
)
def test_parse_date_in_a_language_refuses_what_it_cannot_read(text, lang):
    assert parse_date(text, lang=lang) is None


def test_normalize_record_reads_in_the_language():
    spec = parse_schema(
        {
            "type": "object",
            "properties": {"total": {"type": "number"}, "due": {"type": "string", "format": "date"}},
        }
    )
    record = {"total": "1,500 €", "due": "03/04/2024"}
    assert normalize_record(spec, record) == {"total": 1500.0, "due": "03/04/2024"}
    assert normalize_record(spec, record, lang="de") == {"total": 1.5, "due": "2024-04-03"}
