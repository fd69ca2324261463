import datetime as dt

import pytest

from evaluators.normalize import normalize_string, parse_date, parse_number


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
