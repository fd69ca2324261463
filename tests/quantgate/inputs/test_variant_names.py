"""Two variants of one name, and variants that cannot run together: the message names the files."""

from __future__ import annotations

import pytest

from quantgate.inputs._shorthands import resolve_variants
from quantgate.inputs._variants import VariantSpecError, load_variants_file

A = '[[variants]]\nname = "a"\nbackend = "ollama"\nmodel = "x"\n'
B = '[[variants]]\nname = "b"\nbackend = "ollama"\nmodel = "y"\n'


def test_a_name_twice_in_one_file_names_the_file_and_both_entries(tmp_path):
    path = tmp_path / "v.toml"
    path.write_text(A + B + A)
    with pytest.raises(VariantSpecError) as raised:
        load_variants_file(path)
    assert str(raised.value) == (
        f"two variants are named 'a': {path} (variants entry 1) and {path} (variants entry 3); "
        "names must be unique"
    )


def test_a_name_in_two_files_or_a_file_and_a_shorthand_names_both(tmp_path):
    first, second = tmp_path / "one.toml", tmp_path / "two.toml"
    first.write_text(B + A)
    second.write_text(A)
    with pytest.raises(VariantSpecError) as raised:
        resolve_variants([str(first), str(second)])
    assert str(raised.value) == (
        f"two variants are named 'a': {first} (variants entry 2) and {second} (variants entry 1); "
        "names must be unique"
    )
    with pytest.raises(VariantSpecError) as raised:
        resolve_variants([str(first), "ollama:a"])
    assert str(raised.value) == (
        f"two variants are named 'a': {first} (variants entry 2) and ollama:a; names must be unique"
    )


def test_files_that_cannot_run_together_are_a_variant_spec_error(tmp_path):
    first, second = tmp_path / "one.toml", tmp_path / "two.toml"
    first.write_text(A)
    second.write_text(B + 'options = { grammar_engine = "llguidance" }\n')
    with pytest.raises(VariantSpecError) as raised:
        resolve_variants([str(first), str(second)])
    message = str(raised.value)
    assert message.startswith(f"--variants {first} {second}: the variants must share one grammar_engine")
    assert "\n" not in message


@pytest.mark.parametrize("name", ["Q2_K\n", "Q2_K\r", "Q2_K\n\nx", "\nQ2_K"])
def test_a_name_with_a_line_break_is_refused(tmp_path, name):
    """`$` matches before a final newline: the name is matched whole, or `Q2_K\\n` passed."""
    path = tmp_path / "v.toml"
    path.write_text(f'[[variants]]\nname = {name!r}\nbackend = "ollama"\nmodel = "x"\n'.replace("'", '"'))
    with pytest.raises(VariantSpecError, match=r"variants\[0\]\.name: .*use letters, digits"):
        load_variants_file(path)


@pytest.mark.parametrize(("line", "key"), [('shards = "2"', "shards"), ("shards = true", "shards"),
                                           ("file_size_bytes = 1.5", "file_size_bytes")])  # fmt: skip
def test_loose_types_are_refused(tmp_path, line, key):
    path = tmp_path / "v.toml"
    path.write_text(A + line + "\n")
    with pytest.raises(VariantSpecError, match=rf"variants\[0\]\.{key}: Input should be a valid integer"):
        load_variants_file(path)
