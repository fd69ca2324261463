"""The backend registry: one record per backend, registering and removing one, and a backend that a
separately installed package declares in the `quantgate.backends` entry-point group."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from graphs.extraction import ExtractionContext, ExtractionResult, graph
from quantgate.backends import (
    ENTRY_POINT_GROUP,
    BackendCapabilities,
    BackendError,
    OpenedVariant,
    RegisteredBackend,
    backend_capabilities,
    backend_module,
    backend_names,
    capabilities,
    open_variant,
    registered_backend,
    unregister_backend,
)
from quantgate.backends.llamacpp import CAPABILITIES as LLAMACPP_CAPABILITIES
from quantgate.inputs._variants import Variant
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

PLUGIN = "quantgate_echo_plugin"
"""The module of the test plugin, written into a temporary directory."""

PLUGIN_SOURCE = '''
"""A backend from another package: answers every case with the record it is given."""

from contextlib import contextmanager, suppress

from quantgate.backends import BackendCapabilities, OpenedVariant, RegisteredBackend
from tests.fakes import QueuedChatModel


@contextmanager
def open_echo(variant, schema, *, slots=None):
    yield OpenedVariant(chat_model=QueuedChatModel(outputs=[variant.options["answer"]]))


ECHO = RegisteredBackend(
    name="echo", open=open_echo, capabilities=BackendCapabilities(parallel="instances")
)
NOT_A_BACKEND = open_echo
'''


@contextmanager
def _open_queued(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]), runtime={"slots": slots})


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package installed as pip would leave it: its module and a `.dist-info` whose
    `entry_points.txt` names `echo` (good), `broken` (not a record) and `missing` (no module)."""
    (tmp_path / f"{PLUGIN}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    dist_info = tmp_path / "quantgate_echo_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: quantgate-echo-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\necho = {PLUGIN}:ECHO\nbroken = {PLUGIN}:NOT_A_BACKEND\n"
        "missing = quantgate_no_such_module:ECHO\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    with suppress(BackendError):  # registered when first asked for; the bad ones never are
        unregister_backend("echo")
    sys.modules.pop(PLUGIN, None)


def test_an_installed_plugin_backend_runs_a_case_through_the_extraction_graph(installed_plugin):
    variant = Variant(name="plugged", backend="echo", options={"answer": json.dumps(GOOD)})
    assert {"echo", "llamacpp", "ollama", "langchain"} <= set(backend_names())
    assert capabilities(variant).parallel == "instances"  # declared by the plugin, asked before opening
    assert backend_module("echo") == PLUGIN  # what a worker process imports
    with open_variant(variant, SCHEMA) as opened:
        context = ExtractionContext(model=opened.chat_model, schema=SCHEMA)
        result = ExtractionResult.from_output(graph.invoke({"text": "Factura de Acme"}, context=context))
    assert result.valid
    assert result.record == GOOD


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("broken", r"entry point 'broken' of 'quantgate_echo_plugin:NOT_A_BACKEND' \(group "
                   r"quantgate.backends\) is <function open_echo .*>, not a RegisteredBackend named"),
        ("missing", r"entry point 'missing' of 'quantgate_no_such_module:ECHO' \(group quantgate.backends\) "
                    r"could not be loaded: ModuleNotFoundError: No module named 'quantgate_no_such_module'"),
    ],
)  # fmt: skip
def test_a_bad_entry_point_is_named_with_what_is_wrong(installed_plugin, name, said):
    with pytest.raises(BackendError, match=said):
        open_variant(Variant(name="v", backend=name), SCHEMA)


def test_an_unknown_backend_names_the_known_ones_installed_plugins_included(installed_plugin):
    with pytest.raises(BackendError, match=r"unknown backend 'nowhere'; known: broken, echo, langchain"):
        open_variant(Variant(name="v", backend="nowhere"), SCHEMA)


def test_a_registered_backend_is_one_record_and_unregistering_removes_it():
    with registered_backend("queued", _open_queued) as record:
        assert record == RegisteredBackend(
            name="queued", open=_open_queued, capabilities=BackendCapabilities()
        )
        assert "queued" in backend_names()
    assert "queued" not in backend_names()
    assert backend_capabilities("queued") == BackendCapabilities()
    with pytest.raises(BackendError, match="no backend registered as 'queued'"):
        unregister_backend("queued")


def test_a_backend_registered_over_another_gives_it_back_afterwards():
    with registered_backend("llamacpp", _open_queued, capabilities=BackendCapabilities(parallel="slots")):
        assert backend_capabilities("llamacpp") == BackendCapabilities(parallel="slots")
        with open_variant(Variant(name="v", backend="llamacpp"), SCHEMA, slots=3) as opened:
            assert opened.runtime == {"slots": 3}  # a slots backend is given the slot count
    assert backend_capabilities("llamacpp") == LLAMACPP_CAPABILITIES


def test_only_a_slots_backend_is_given_the_slot_count(register_backend):
    register_backend("copies", _open_queued, capabilities=BackendCapabilities(parallel="instances"))
    with open_variant(Variant(name="v", backend="copies"), SCHEMA, slots=3) as opened:
        assert opened.runtime == {"slots": None}
