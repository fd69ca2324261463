"""`BACKEND:MODEL` shorthands are read by the backend's own `Shorthand`, found through the
`quantgate.variant_shorthands` entry points (the built-ins' as a plugin's): no backend is known by name."""

from __future__ import annotations

import sys
import textwrap
import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import quantgate.inputs._shorthands as shorthands_module
from quantgate.inputs._shorthands import (
    SHORTHAND_GROUP,
    Shorthand,
    is_variants_file,
    parse_spec,
    resolve_variants,
)
from quantgate.inputs._variants import Variant, VariantSpecError
from quantgate.serve._paths import PathRefusedError, UnusableFileError, variant_argument

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = "quantgate_shorthand_plugin"

PLUGIN_SOURCE = """
from quantgate.inputs._shorthands import Shorthand
from quantgate.inputs._variants import Variant

def _card(spec, model):
    return Variant(name=model.replace("/", "_"), backend="cards", model=model)

CARDS = Shorthand(backend="cards", model="name", parse=_card)
DISK = Shorthand(
    backend="disk", model="file", parse=lambda spec, model: Variant(name="d", backend="disk", model=model)
)
"""


@pytest.fixture
def shorthand_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package that names two shorthands, `cards:` (a name) and `disk:` (a local file)."""
    (tmp_path / f"{PLUGIN}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    dist_info = tmp_path / "quantgate_shorthand_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: quantgate-shorthand-plugin\nVersion: 0.1\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[{SHORTHAND_GROUP}]\ncards = {PLUGIN}:CARDS\ndisk = {PLUGIN}:DISK\nbent = {PLUGIN}:_card\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(shorthands_module, "_SHORTHANDS", {})
    yield tmp_path
    sys.modules.pop(PLUGIN, None)


def test_pyproject_names_each_built_in_folder_shorthand():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = pyproject["project"]["entry-points"][SHORTHAND_GROUP]
    assert declared == {
        name: f"quantgate.backends.{name}._{name}_shorthand:SHORTHAND"
        for name in ("llamacpp", "ollama", "openai")
    }
    kinds = {}
    for name, value in declared.items():
        shorthand = EntryPoint(name=name, value=value, group=SHORTHAND_GROUP).load()
        assert isinstance(shorthand, Shorthand)
        kinds[shorthand.backend] = shorthand.model
    assert kinds == {"llamacpp": "file", "ollama": "name", "openai": "address"}


def test_a_plugin_shorthand_is_read_by_its_backend(shorthand_plugin: Path):
    assert parse_spec("cards:deck/q4") == Variant(name="deck_q4", backend="cards", model="deck/q4")
    assert not is_variants_file("cards:deck.toml")  # its shorthand, not a file
    assert is_variants_file("nobody:deck.toml")
    assert [v.name for v in resolve_variants(["cards:a", "cards:b"]).variants] == ["a", "b"]
    with pytest.raises(
        VariantSpecError, match=r"^entry point 'bent' of .* is <function _card .*>, not a Shorthand"
    ):
        parse_spec("bent:x")


def test_the_api_checks_a_plugin_file_shorthand_inside_the_roots(shorthand_plugin: Path, tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "m.bin").write_text("m")
    assert variant_argument(f"disk:{root}/m.bin", [root]) == f"disk:{root / 'm.bin'}"
    with pytest.raises(PathRefusedError):
        variant_argument("disk:/etc/passwd", [root])
    assert variant_argument("cards:deck", [root]) == "cards:deck"
    with pytest.raises(UnusableFileError, match="expected BACKEND:MODEL"):
        variant_argument("cards:", [root])


def test_without_the_entry_points_no_shorthand_is_known(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(shorthands_module, "_SHORTHANDS", {})
    monkeypatch.setattr(shorthands_module, "entry_points", lambda **selection: [])
    with pytest.raises(VariantSpecError) as raised:
        parse_spec("ollama:gemma3:1b")
    assert str(raised.value) == "variant 'ollama:gemma3:1b': unknown backend 'ollama' (known: none installed)"
    assert is_variants_file("ollama:x.toml")  # no shorthand reads it: a file's name
