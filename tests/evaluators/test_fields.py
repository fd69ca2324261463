import copy

import pytest

from evaluators.fields import score_fields
from evaluators.matchers import MatchOptions
from evaluators.schema import SchemaSupportError, field_names, parse_schema

from .schemas import GOLD, INVOICE


def test_field_names_are_flattened_dotted():
    assert field_names(INVOICE) == [
        "vendor", "total", "items_count", "paid", "issue_date", "currency", "tags",
        "customer.name", "customer.email", "items.description", "items.amount",
    ]  # fmt: skip


def test_gold_against_itself_is_perfect():
    result = score_fields(outputs=GOLD, reference_outputs=GOLD, schema=INVOICE)
    assert result.score == 1.0
    keys = result.as_keys()
    assert keys["field:items.amount"] == 1.0
    assert keys["field:*"] == 1.0
    assert len(keys) == 12


def test_spanish_formats_and_unicode_match_canonical_gold():
    predicted = copy.deepcopy(GOLD)
    predicted.update(
        vendor="PAPELERÍA NU\u0301N\u0303EZ.",
        total="1.234,56 €",
        issue_date="3 de marzo de 2024",
        tags=["Urgent", "office", "office"],
    )
    result = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE)
    assert {k: v.score for k, v in result.fields.items() if v.score != 1.0} == {}


@pytest.mark.parametrize(
    ("lang", "total", "amount", "issue_date"),
    [
        ("fr", "1 234,56 €", "1 200,00", "3 mars 2024"),
        ("de", "1.234,56 €", "1.200", "3. März 2024"),
        ("pt", "1.234,56 €", "1.200,00", "3 de março de 2024"),
        ("it", "€ 1.234,56", "1.200", "03/03/2024"),
    ],
)
def test_fields_are_read_in_the_case_language(lang, total, amount, issue_date):
    predicted = copy.deepcopy(GOLD)
    predicted.update(total=total, issue_date=issue_date)
    predicted["items"][1]["amount"] = amount
    result = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE, lang=lang)
    assert {k: v.score for k, v in result.fields.items() if v.score != 1.0} == {}


def test_a_wrong_language_reading_does_not_match():
    gold = {**GOLD, "total": 1.234, "issue_date": "2024-03-04"}
    predicted = {**GOLD, "total": "1.234", "issue_date": "03/04/2024"}
    english = score_fields(outputs=predicted, reference_outputs=gold, schema=INVOICE, lang="en").fields
    french = score_fields(outputs=predicted, reference_outputs=gold, schema=INVOICE, lang="fr").fields
    unknown = score_fields(outputs=predicted, reference_outputs=gold, schema=INVOICE).fields
    assert (english["total"].score, english["issue_date"].score) == (1.0, 1.0)
    assert (french["total"].score, french["issue_date"].score) == (0.0, 0.0)
    assert unknown["issue_date"].score == 0.0  # ambiguous without a language


def test_null_rules():
    gold = {**GOLD, "vendor": None, "total": 10.0}
    predicted = {**GOLD, "vendor": "Someone", "total": None, "paid": ""}
    result = score_fields(outputs=predicted, reference_outputs=gold, schema=INVOICE).fields
    assert (result["vendor"].score, result["vendor"].outcome) == (0.0, "false_positive")
    assert (result["total"].score, result["total"].outcome) == (0.0, "missed")
    assert (result["paid"].score, result["paid"].outcome) == (0.0, "missed")
    assert (result["customer.email"].score, result["customer.email"].outcome) == (1.0, "correct")


def test_missing_keys_and_missing_nested_object_count_as_null():
    predicted = {k: v for k, v in GOLD.items() if k not in ("vendor", "customer")}
    result = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE).fields
    assert result["vendor"].outcome == "missed"
    assert result["customer.name"].outcome == "missed"
    assert result["customer.email"].outcome == "correct"  # gold null, predicted absent


def test_object_array_best_assignment_is_order_independent():
    predicted = {**GOLD, "items": list(reversed(GOLD["items"]))}
    result = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE).fields
    assert result["items.description"].score == 1.0
    assert result["items.amount"].score == 1.0


def test_object_array_partial_and_extra_items():
    predicted = {
        **GOLD,
        "items": [
            {"description": "Impresora", "amount": 1200.0},
            {"description": "Folios A4", "amount": 99.0},
            {"description": "Grapadora", "amount": 5.0},
        ],
    }
    result = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE).fields
    # two pairs; the longer list has 3 items
    assert result["items.description"].score == pytest.approx(2 / 3)
    assert result["items.amount"].score == pytest.approx(1 / 3)
    assert result["items.amount"].outcome == "partial"


def test_empty_arrays():
    gold = {**GOLD, "items": [], "tags": []}
    same = score_fields(outputs=gold, reference_outputs=gold, schema=INVOICE).fields
    assert same["items.amount"].score == 1.0
    assert same["tags"].score == 1.0
    extra = score_fields(outputs=GOLD, reference_outputs=gold, schema=INVOICE).fields
    assert extra["items.amount"].outcome == "false_positive"
    assert extra["tags"].outcome == "false_positive"
    none = score_fields(outputs=gold, reference_outputs=GOLD, schema=INVOICE).fields
    assert none["items.amount"].outcome == "missed"
    assert none["tags"].score == 0.0


def test_no_output_fails_every_field():
    result = score_fields(outputs=None, reference_outputs=GOLD, schema=INVOICE)
    assert result.score == 0.0
    assert {f.outcome for f in result.fields.values()} == {"no_output"}


def test_fuzzy_option_reaches_strings_inside_arrays_of_objects():
    predicted = {
        **GOLD,
        "items": [{"description": "Folios A-4", "amount": 34.56}, GOLD["items"][1]],
    }
    strict = score_fields(outputs=predicted, reference_outputs=GOLD, schema=INVOICE).fields
    fuzzy = score_fields(
        outputs=predicted,
        reference_outputs=GOLD,
        schema=INVOICE,
        options=MatchOptions(string_fuzzy_threshold=85),
    ).fields
    assert strict["items.description"].score == 0.5
    assert fuzzy["items.description"].score == 1.0


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}},
            "unsupported construct '$ref'",
        ),
        ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}, "'anyOf'"),
        (
            {"type": "object", "properties": {"a": {"type": ["string", "number"]}}},
            "exactly one non-null type",
        ),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "needs an 'items'"),
        ({"type": "array", "items": {"type": "string"}}, "root must be an object"),
        ({"type": "object", "properties": {}}, "non-empty 'properties'"),
        ({"type": "object", "properties": {"a": {"description": "no type"}}}, "needs a 'type'"),
    ],
)
def test_unsupported_schemas_are_named(schema, message):
    with pytest.raises(SchemaSupportError, match=message.replace("$", r"\$").replace("(", r"\(")):
        parse_schema(schema)
