import pytest

from quantgate.inputs._shorthands import parse_spec, resolve_variants
from quantgate.inputs._variants import (
    Variant,
    VariantSet,
    VariantSpecError,
    load_variants_file,
    write_variants_file,
)


def test_shorthands(tmp_path):
    gguf = tmp_path / "model-Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF")
    variant = parse_spec(f"llamacpp:{gguf}")
    assert (variant.name, variant.backend, variant.model) == ("model-Q4_K_M", "llamacpp", str(gguf))
    ollama = parse_spec("ollama:gemma3:12b-it-q4_K_M")
    assert (ollama.name, ollama.backend, ollama.model) == (
        "gemma3:12b-it-q4_K_M",
        "ollama",
        "gemma3:12b-it-q4_K_M",
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("model.gguf", "expected BACKEND:MODEL"),
        ("llamacpp:", "expected BACKEND:MODEL"),
        ("llamacpp:/nowhere/x.gguf", "no GGUF file"),
        ("tgi:foo", "unknown backend 'tgi'"),
    ],
)
def test_invalid_shorthands(spec, message):
    with pytest.raises(VariantSpecError, match=message):
        parse_spec(spec)


def test_toml_round_trip_and_mixing(tmp_path):
    original = VariantSet(
        reference="F16",
        variants=[
            Variant(
                name="F16", backend="llamacpp", model="/m/f16.gguf", quantization="F16", file_size_bytes=10
            ),
            Variant(name="q4", backend="ollama", model="gemma3:12b-it-q4_K_M", options={"num_ctx": 8192}),
        ],
    )
    path = tmp_path / "v.toml"
    write_variants_file(path, original)
    assert load_variants_file(path) == original
    mixed = resolve_variants([str(path), "ollama:gemma3:12b-it-q8_0"])
    assert [v.name for v in mixed.variants] == ["F16", "q4", "gemma3:12b-it-q8_0"]
    assert mixed.reference == "F16"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("variants = [", "v.toml"),
        ('[[variants]]\nname = "a b"\nbackend = "llamacpp"\n', "use letters, digits"),
        ('[[variants]]\nname = "a"\nbackend = "llamacpp"\ncolour = 1\n', "colour"),
        (
            'reference = "z"\n[[variants]]\nname = "a"\nbackend = "x"\n',
            "reference 'z' is not one of its variants",
        ),
        ('[[variants]]\nname = "a"\nbackend = "x"\n[[variants]]\nname = "a"\nbackend = "y"\n', "named 'a'"),
        (
            '[[variants]]\nname = "a"\nbackend = "x"\noptions = {grammar_engine = "llguidance"}\n'
            '[[variants]]\nname = "b"\nbackend = "x"\n',
            "share one grammar_engine and fast_forward option \\(a uses llguidance, b uses the default\\)",
        ),
        (
            '[[variants]]\nname = "a"\nbackend = "x"\noptions = {grammar_engine = "llguidance"}\n'
            '[[variants]]\nname = "b"\nbackend = "x"\n'
            'options = {grammar_engine = "llguidance", fast_forward = true}\n',
            "\\(a uses llguidance, b uses llguidance with fast_forward\\)",
        ),
    ],
)
def test_invalid_files(tmp_path, text, message):
    path = tmp_path / "v.toml"
    path.write_text(text)
    with pytest.raises(VariantSpecError, match=message):
        load_variants_file(path)


def test_an_entry_with_a_backend_prefix_is_a_shorthand_whatever_it_ends_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ollama:evil.toml").write_text('[[variants]]\nname = "file"\nbackend = "ollama"\n')
    [variant] = resolve_variants(["ollama:evil.toml"]).variants
    assert (variant.name, variant.backend, variant.model) == ("evil.toml", "ollama", "evil.toml")
    [from_file] = resolve_variants(["./ollama:evil.toml"]).variants  # a file, named as a path
    assert from_file.name == "file"
    with pytest.raises(VariantSpecError, match="no GGUF file"):
        resolve_variants(["llamacpp:x.toml"])


@pytest.mark.parametrize("spec", ["ollama:_x", "ollama:-x", "ollama:é", "ollama:/../../x.toml"])
def test_a_shorthand_whose_name_breaks_the_rule_is_refused_naming_it(spec):
    with pytest.raises(VariantSpecError, match=f"variant '{spec}': .*starting with a letter or digit"):
        resolve_variants([spec])
