"""Structural and value tokens of a JSON answer (`evaluators.json_tokens`)."""

import json

from evaluators.json_tokens import byte_kinds, token_kinds


def test_keys_quotes_and_punctuation_are_structural_values_are_not():
    answer = b'{"name": "Acme", "n": [12, true]}'
    kinds = byte_kinds(answer)
    by_byte = "".join({"structural": "s", "value": "v", None: "."}[k] for k in kinds)
    # {"name": "  Acme  ", "n": [  12  ,   true  ]}
    expected = "s" * 10 + "v" * 4 + "s" * 9 + "v" * 2 + "s" * 2 + "v" * 4 + "s" * 2
    assert by_byte == expected
    assert len(by_byte) == len(answer)


def test_a_token_with_any_value_byte_is_a_value_token():
    pieces = [b'{"', b"name", b'":', b' "', b"Ac", b'me",', b' "n', b'":', b" 12", b"}"]
    assert token_kinds(pieces) == (
        "structural", "structural", "structural", "structural", "value", "value",
        "structural", "structural", "value", "structural",
    )  # fmt: skip


def test_escaped_quotes_stay_inside_the_string_and_text_outside_the_json_is_neither():
    answer = b'```json\n{"q": "say \\"hi\\", {ok}"}\n```'
    assert json.loads(answer[8:-4])["q"] == 'say "hi", {ok}'
    kinds = byte_kinds(answer)
    assert set(kinds[:8]) == {None}  # the fence
    assert set(kinds[-4:]) == {None}  # after the closing brace
    value = answer.index(b"say")
    assert set(kinds[value : answer.index(b'"}')]) == {"value"}
    assert kinds[answer.index(b'"}')] == "structural"


def test_nested_objects_in_arrays_have_keys_again():
    pieces = [b'[{"', b"k", b'":', b'"v"', b"},{", b'"k2"', b":", b"null", b"}]"]
    assert token_kinds(pieces) == (
        "structural", "structural", "structural", "value", "structural", "structural",
        "structural", "value", "structural",
    )  # fmt: skip
