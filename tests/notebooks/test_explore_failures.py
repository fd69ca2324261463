"""notebooks/explore_failures.ipynb runs from top to bottom against a run, with nbclient."""

import re
from pathlib import Path

import pytest

from tests.quantgate.run_factory import HOSTILE_OUTPUT, make_fake_run

nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[test]')")
nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[test]')")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "explore_failures.ipynb"


def execute(run_dir, monkeypatch):
    """Execute the notebook on `run_dir` (passed as QUANTGATE_RUN); raises on any cell error."""
    monkeypatch.setenv("QUANTGATE_RUN", str(run_dir))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    return notebook


def output_text(notebook) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.extend(str(v) for v in output.get("data", {}).values())
    return "\n".join(parts)


def test_notebook_is_stored_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert "RUN_DIR" in notebook.cells[0].source  # the run is set in the first cell
    source = "\n".join(c.source for c in code)
    assert "from quantgate.explore import" in source
    assert re.findall(r"^def (\w+)", source, flags=re.MULTILINE) == ["mark_wrong"]  # a display helper only


def test_notebook_runs_on_a_synthetic_run(tmp_path, monkeypatch):
    run_dir = make_fake_run(tmp_path)
    notebook = execute(run_dir, monkeypatch)
    text = output_text(notebook)
    assert f"run {run_dir.name}: reference ref, variants: ref, quant" in text
    assert "5 field(s) in 2 case x variant pair(s)" in text  # quant alone fails c1 (vendor) and c3 (all 4)
    assert "&lt;script&gt;alert(3)" in text or HOSTILE_OUTPUT in text  # c1's diff is shown
    assert "c1 (quant), tags: lang:en, numbers, lists" in text


@pytest.mark.model
@pytest.mark.slow
def test_notebook_runs_on_a_small_real_run(small_real_run, monkeypatch):
    notebook = execute(small_real_run, monkeypatch)
    text = output_text(notebook)
    assert f"run {small_real_run.name}: reference F16, variants: F16, Q4_K_M" in text
