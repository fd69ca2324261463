from evaluators.format import FormatEvaluator, parse_json_output, score_format

from .schemas import GOLD, INVOICE


def test_valid_record():
    result = score_format(outputs=GOLD, schema=INVOICE)
    assert result.valid
    assert result.errors == ()


def test_raw_text_with_fence_parses():
    value, error = parse_json_output('```json\n{"a": 1}\n```')
    assert value == {"a": 1}
    assert error is None


def test_invalid_json_names_line_and_column():
    result = score_format(outputs='{"vendor": "x",\n "total": }', schema=INVOICE)
    assert result.is_json is False
    assert result.schema_valid is None
    assert "line 2 column" in result.errors[0].message


def test_schema_errors_name_their_path():
    bad = {**GOLD, "total": "abc", "items": [{"description": "x", "amount": "1"}]}
    result = FormatEvaluator(schema=INVOICE)(outputs=bad)
    assert result.is_json is True
    assert result.schema_valid is False
    paths = {str(e) for e in result.errors}
    assert "total: 'abc' is not of type 'number', 'null'" in paths
    assert "items[0].amount: '1' is not of type 'number', 'null'" in paths


def test_no_output_is_not_measured_as_json():
    result = score_format(outputs=None, schema=INVOICE)
    assert result.is_json is None
    assert not result.valid


def test_a_number_too_large_for_a_double_is_not_json_and_does_not_crash_the_validator():
    schema = {"type": "object", "properties": {"a": {"type": "number", "multipleOf": 0.5}}}
    result = score_format(outputs='{"a": 1e999}', schema=schema)  # Python reads it as infinity
    assert result.is_json is False
    assert [str(e) for e in result.errors] == [
        "<root>: not valid JSON (number out of range at line 1 column 1)"
    ]
    assert score_format(outputs='{"a": 1.5e2}', schema=schema).valid
