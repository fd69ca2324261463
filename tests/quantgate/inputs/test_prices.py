"""A costs TOML file: every key optional, and each problem named with the file and the key."""

from __future__ import annotations

import pytest

from quantgate.inputs._prices import CostsError, Prices, load_prices


def _write(tmp_path, text: str):
    path = tmp_path / "costs.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_key_is_optional_and_is_read_as_given(tmp_path):
    assert load_prices(_write(tmp_path, "")) == Prices()
    prices = load_prices(_write(tmp_path, 'currency = "EUR"\nreview_per_field = {date = 1.5, "*" = 0.5}\n'
                                          "node_per_hour = 1.2\nextractions_per_hour = 500\n"))  # fmt: skip
    assert prices.currency == "EUR"
    assert prices.node_per_hour == 1.2
    assert prices.field_price("date") == 1.5
    assert prices.field_price("amount") == 0.5
    assert prices.extractions_per_hour == 500
    assert prices.retry_call is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("review_per_case = -1", "costs.toml: review_per_case: Input should be greater than or equal to 0"),
        ("node_per_hour = 'cheap'", "costs.toml: node_per_hour: Input should be a valid number"),
        (
            "extractions_per_hour = 0",
            "costs.toml: extractions_per_hour: Input should be greater than or equal to 0.000001",
        ),
        # strict types: a string or a boolean is no price (they were read as 4.0 and 1.0)
        ('review_per_case = "4"', "costs.toml: review_per_case: Input should be a valid number"),
        ("retry_call = true", "costs.toml: retry_call: Input should be a valid number"),
        # finite, and small enough that no cost per 1,000 extractions overflows to infinity
        (
            "node_per_hour = 1e308",
            "costs.toml: node_per_hour: Input should be less than or equal to 1000000000000",
        ),
        ("node_per_hour = inf", "costs.toml: node_per_hour: Input should be a finite number"),
        ("energy_per_1k_tokens = nan", "costs.toml: energy_per_1k_tokens: Input should be a finite number"),
        ("review_cost = 2", "costs.toml: review_cost: Extra inputs are not permitted"),
        ("format_version = 2", "costs.toml: format_version: Input should be 1"),
        (
            "review_per_case = 1\nreview_per_field = {date = 2}",
            "give review_per_case or review_per_field, not both",
        ),
        ("node_per_hour = ", "costs.toml: not valid TOML"),
        # issue 46: a raw ESC byte reached decision.md through the currency
        (
            'currency = "E\\u001b[2JUR"',
            "costs.toml: currency: Value error, 'E\\x1b[2JUR' has control characters (such as ESC, a tab",
        ),
        ('review_per_field = {"da\\nte" = 1}', "[key]: Value error, 'da\\nte' has control characters"),
    ],
)
def test_a_bad_value_is_named_with_its_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(CostsError) as raised:
        load_prices(path)
    assert str(raised.value).startswith(str(path))
    assert message.removeprefix("costs.toml") in str(raised.value)


def test_an_integer_price_is_read_as_a_float(tmp_path):
    assert load_prices(_write(tmp_path, "review_per_case = 4")).review_per_case == 4.0


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(CostsError, match=r"absent\.toml: no such costs file"):
        load_prices(tmp_path / "absent.toml")
