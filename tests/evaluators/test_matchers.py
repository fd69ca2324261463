import pytest

from evaluators.matchers import (
    MatchOptions,
    match_boolean,
    match_date,
    match_enum,
    match_integer,
    match_number,
    match_set,
    match_string,
)


def test_string_normalization_and_fuzzy_threshold():
    assert match_string("Café Central", "  café   central. ") == 1.0
    assert match_string("Café Central", "Cafe Central") == 0.0
    fuzzy = MatchOptions(string_fuzzy_threshold=90)
    assert match_string("Café Central", "Cafe Central", fuzzy) == 1.0
    assert match_string("Café Central", "Bar Manolo", fuzzy) == 0.0


def test_string_against_non_string_prediction():
    assert match_string("28030", 28030) == 1.0
    assert match_string("true", True) == 1.0


def test_number_tolerances():
    assert match_number(1234.56, 1234.56) == 1.0
    assert match_number(1234.56, "1.234,56 €") == 1.0
    assert match_number(1234.56, 1234.5) == 0.0
    loose = MatchOptions(number_rel_tol=0.01)
    assert match_number(1000, 1009, loose) == 1.0
    assert match_number(1000, 1011, loose) == 0.0
    absolute = MatchOptions(number_abs_tol=0.01, number_rel_tol=0)
    assert match_number(0.5, 0.505, absolute) == 1.0
    assert match_number(10, float("nan")) == 0.0
    assert match_number(10, "ten") == 0.0


def test_integer_is_exact():
    assert match_integer(27, 27) == 1.0
    assert match_integer(27, 27.0) == 1.0
    assert match_integer(27, "27") == 1.0
    assert match_integer(27, 27.5) == 0.0
    assert match_integer(27, 28) == 0.0


def test_boolean():
    assert match_boolean(True, True) == 1.0
    assert match_boolean(False, "false") == 1.0
    assert match_boolean(True, 1) == 0.0
    assert match_boolean(False, None) == 0.0


def test_date_compares_dates_not_strings():
    assert match_date("2024-03-03", "2024-03-03") == 1.0
    assert match_date("2024-03-03", "3 de marzo de 2024") == 1.0
    assert match_date("2024-03-03", "2024-3-3") == 1.0
    assert match_date("2024-03-03", "2024-03-04") == 0.0
    # ambiguous without a locale: not a match
    assert match_date("2024-04-03", "03/04/2024") == 0.0


def test_enum_is_exact():
    assert match_enum("EUR", "EUR") == 1.0
    assert match_enum("EUR", "eur") == 0.0
    assert match_enum(1, True) == 0.0


def test_set_precision_recall_f1():
    result = match_set("string", ["Ana", "Luis", "Zoë"], ["ana", "Pedro"])
    assert result.precision == 0.5
    assert result.recall == pytest.approx(1 / 3)
    assert result.f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_set_empty_and_duplicates():
    assert match_set("string", [], []).f1 == 1.0
    assert match_set("string", [], []).precision is None
    assert match_set("string", ["a"], []).f1 == 0.0
    assert match_set("string", [], ["a"]).f1 == 0.0
    assert match_set("string", ["a", "b"], ["A", "a", "b", "b "]).f1 == 1.0
    assert match_set("number", [1.5, 2], ["1,5", 2.0]).f1 == 1.0
    assert match_set("date", ["2024-03-03"], ["3 de marzo de 2024"]).f1 == 1.0


def test_numbers_and_dates_in_the_case_language():
    assert match_number(1234, "1.234", lang="de") == 1.0
    assert match_number(1234, "1.234", lang="en") == 0.0
    assert match_integer(1234, "1 234", lang="fr") == 1.0
    assert match_date("2024-04-03", "03/04/2024", lang="fr") == 1.0
    assert match_date("2024-04-03", "03/04/2024", lang="en") == 0.0
    assert match_date("2024-03-15", "15 de março de 2024", lang="pt") == 1.0
    assert match_set("number", [1.5, 1234], ["1,5", "1.234"], lang="de").f1 == 1.0
    assert match_set("date", ["2024-03-03"], ["3 marzo 2024"], lang="it").f1 == 1.0
    assert match_string("Acme", "acme", lang="fr") == 1.0
