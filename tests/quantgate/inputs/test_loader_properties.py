"""Property tests: whatever bytes a user's files hold, the dataset, variants and gates loaders and
the model-output parser answer with a located error (naming the file, and the line where there is
one) or a value, never another exception; and the command line never prints a traceback."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluators import parse_json_output
from quantgate.cli._main import main
from quantgate.inputs._dataset import check_dataset
from quantgate.inputs._gates import GATE_KEYS, Gates, GatesError, load_gates
from quantgate.inputs._variants import VariantSet, VariantSpecError, load_variants_file
from tests.fakes import TOTAL_SCHEMA, case, write_dataset

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
toml_values = st.recursive(
    st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)  # fmt: skip
junk_bytes = st.binary(max_size=120)
pathological_json = st.sampled_from(
    ["[" * 5000, '{"a":' * 3000, "1" * 5000, "-" + "9" * 4400, "[" * 50 + "]"]
)


def _toml(document: dict[str, Any]) -> str:
    return tomli_w.dumps(document)


gates_documents = st.dictionaries(
    st.sampled_from([*GATE_KEYS, "format_version", "nope"]), toml_values, max_size=4
)
variant_entries = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text(max_size=10),
        "backend": st.sampled_from(["llamacpp", "ollama", "langchain", ""]) | st.text(max_size=5),
        "model": st.text(max_size=10),
        "quantization": st.text(max_size=5),
        "options": st.dictionaries(st.text(max_size=6), toml_values, max_size=3),
        "extra": toml_values,
    },
)
variants_documents = st.fixed_dictionaries(
    {"variants": st.lists(variant_entries, max_size=3)},
    optional={"reference": st.text(max_size=8), "format_version": st.integers(0, 3)},
)


def _file_content(documents: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        documents.map(lambda d: _toml(d).encode()), junk_bytes, st.text(max_size=80).map(str.encode)
    )


def _loaded_or_message(
    content: bytes, name: str, load: Callable[[Path], object], error: type[Exception]
) -> tuple[object, str, str | None]:
    """What `load` makes of a file `name` holding `content`: its value (or None), the file's path,
    and its error's message (or None); any other exception fails the test."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        try:
            return load(path), str(path), None
        except error as exc:
            return None, str(path), str(exc)


@given(_file_content(gates_documents))
@settings(max_examples=200, deadline=None)
def test_a_gates_file_gives_gates_or_an_error_naming_it(content):
    gates, path, message = _loaded_or_message(content, "gates.toml", load_gates, GatesError)
    assert isinstance(gates, Gates) or (message is not None and message.startswith(path)), message


@given(_file_content(variants_documents))
@settings(max_examples=200, deadline=None)
def test_a_variants_file_gives_variants_or_an_error_naming_it(content):
    variants, _, message = _loaded_or_message(content, "variants.toml", load_variants_file, VariantSpecError)
    assert isinstance(variants, VariantSet) or (message is not None and "variants.toml" in message), message


@given(
    st.one_of(junk_bytes, pathological_json.map(str.encode)), st.sampled_from(["schema", "cases", "examples"])
)
@settings(max_examples=150, deadline=None)
def test_any_bytes_in_a_dataset_file_are_reported_in_that_file(content, which):
    lines = [json.dumps(case(0)), json.dumps(case(1))]
    with tempfile.TemporaryDirectory() as tmp:
        root = write_dataset(Path(tmp) / "d", lines, schema=TOTAL_SCHEMA, examples=[case(9)])
        name = {"schema": "schema.json", "cases": "cases.jsonl", "examples": "examples.jsonl"}[which]
        (root / name).write_bytes(content)
        dataset, problems = check_dataset(root)
    errors = [p for p in problems if p.severity == "error"]
    assert dataset is not None or errors
    for error in errors:
        assert str(error).startswith(name), str(error)
        if error.line is not None:  # a line's problem names it; the others are the whole file's
            assert re.match(rf"{re.escape(name)}:{error.line}: ", str(error)), str(error)


@given(
    st.one_of(
        pathological_json, st.text(max_size=300), st.binary(max_size=100).map(lambda b: b.decode("latin-1"))
    )
)
@settings(max_examples=200, deadline=None)
def test_any_model_output_parses_or_gets_a_json_error_with_its_place(raw):
    value, error = parse_json_output(raw)
    if error is not None:
        assert value is None
        assert error.path == "<root>"
        assert re.fullmatch(r"not valid JSON \(.+ at line \d+ column \d+\)", error.message, flags=re.DOTALL)


@given(st.binary(min_size=1, max_size=60), st.sampled_from(["--gates", "--variants"]))
@settings(max_examples=40, deadline=None)
def test_the_command_line_never_prints_a_traceback_for_a_junk_file(content, flag):
    import contextlib
    import io

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junk.toml"
        path.write_bytes(content)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["decide", tmp, flag, str(path)] if flag == "--gates" else ["run", flag, str(path)])
    assert status == 2
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "quantgate: error: " in err.getvalue()
