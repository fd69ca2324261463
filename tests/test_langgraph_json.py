"""langgraph.json: every graph it lists imports cleanly and is a compiled graph."""

import importlib
import json
from pathlib import Path

from langgraph.graph.state import CompiledStateGraph

import graphs.evaluation
import graphs.extraction

ROOT = Path(__file__).resolve().parents[1]


def _load(reference: str) -> object:
    """Import a `./path/to/module.py:attribute` reference, as `langgraph dev` does."""
    path, _, attribute = reference.partition(":")
    module = Path(path).with_suffix("").as_posix().removeprefix("./").replace("/", ".")
    return getattr(importlib.import_module(module), attribute)


def test_langgraph_json_lists_both_graphs_and_they_import() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["dependencies"] == ["."]
    assert set(config["graphs"]) == {"extraction", "evaluation"}
    for name, reference in config["graphs"].items():
        assert (ROOT / reference.partition(":")[0]).is_file(), reference
        graph = _load(reference)
        assert isinstance(graph, CompiledStateGraph), name
        assert graph.name == name
    assert _load(config["graphs"]["extraction"]) is graphs.extraction.graph  # the graph production imports
    assert _load(config["graphs"]["evaluation"]) is graphs.evaluation.graph
