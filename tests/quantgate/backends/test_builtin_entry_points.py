"""The built-in backends are registered as any plugin's: quantgate's pyproject.toml names each folder's
record in the `quantgate.backends` entry-point group, and the registry knows no backend by name."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import quantgate.backends as backends
from quantgate.backends import ENTRY_POINT_GROUP, BackendError, RegisteredBackend, open_variant
from quantgate.inputs._variants import Variant
from tests.fakes import SCHEMA

ROOT = Path(__file__).resolve().parents[3]
BUILT_IN = {"langchain", "llamacpp", "ollama", "openai"}


def _declared() -> dict[str, str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(pyproject["project"]["entry-points"][ENTRY_POINT_GROUP])


def test_pyproject_names_each_built_in_folder_record():
    declared = _declared()
    assert set(declared) == BUILT_IN
    for name, value in declared.items():
        record = EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP).load()
        assert isinstance(record, RegisteredBackend)
        assert record.name == name
        assert value == f"quantgate.backends.{name}:BACKEND"  # the record lives in the backend's folder
        assert record.open.__module__ == f"quantgate.backends.{name}"  # what a worker process imports


def test_the_installed_entry_points_give_the_built_ins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Installed as pip leaves it (a `.dist-info` whose `entry_points.txt` pyproject.toml gives), each
    built-in comes from its entry point, with the capabilities its folder declares."""
    dist_info = tmp_path / "quantgate-0.1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: quantgate\nVersion: 0.1.0\n")
    lines = [f"{name} = {value}" for name, value in _declared().items()]
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(backends, "_REGISTRY", {})
    assert set(backends.backend_names()) >= BUILT_IN
    from quantgate.backends.ollama import CAPABILITIES

    assert backends.backend_capabilities("ollama") == CAPABILITIES
    assert backends._REGISTRY["ollama"].open.__module__ == "quantgate.backends.ollama"


def test_without_the_entry_points_no_backend_is_known_and_the_error_says_to_reinstall(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(backends, "_REGISTRY", {})
    monkeypatch.setattr(backends, "entry_points", lambda **selection: [])
    assert backends.backend_names() == []
    with pytest.raises(BackendError) as raised:
        open_variant(Variant(name="q4", backend="llamacpp", model="m.gguf"), SCHEMA)
    assert str(raised.value) == (
        "variant q4: unknown backend 'llamacpp'; known: none (quantgate's installed metadata names none "
        "of its own backends in the quantgate.backends entry-point group: install it again, e.g. "
        "`pip install -e .` in its checkout)"
    )
