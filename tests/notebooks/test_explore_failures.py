"""notebooks/explore_failures.ipynb runs from top to bottom against a run, with nbclient."""

import re
from pathlib import Path

import pytest

from tests.quantgate.analysis import kind_runs
from tests.quantgate.suite.test_suite_report import make_suite
from tests.quantgate.run_factory import (
    HOSTILE_OUTPUT,
    TAIL_CASE_A,
    make_fake_run,
    make_run,
    with_token_fidelity,
)

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
    assert f"run {run_dir.name} (extraction): reference ref, variants: ref, quant" in text
    assert "5 field(s) in 2 case x variant pair(s)" in text  # quant alone fails c1 (vendor) and c3 (all 4)
    assert "&lt;script&gt;alert(3)" in text or HOSTILE_OUTPUT in text  # c1's diff is shown
    assert "c1 (quant), tags: lang:en, numbers, lists" in text


@pytest.mark.model
@pytest.mark.slow
def test_notebook_runs_on_a_small_real_run(small_real_run, monkeypatch):
    notebook = execute(small_real_run, monkeypatch)
    text = output_text(notebook)
    assert f"run {small_real_run.name} (extraction): reference F16, variants: F16, Q4_K_M" in text


def test_notebook_shows_a_classification_runs_figures_and_labels(tmp_path, monkeypatch):
    run_dir = kind_runs.classification_run(tmp_path)
    text = output_text(execute(run_dir, monkeypatch))
    assert f"run {run_dir.name} (classification): reference ref, variants: ref, quant" in text
    assert "task kind: classification" in text
    assert "0.507937" in text  # quant's macro-F1, 32/63 (tests/quantgate/analysis/test_task_report.py)
    assert "2 failing case x variant pair(s)" in text  # c1 and c4
    failures = re.sub(r"\s+", " ", text)
    assert "quant c1 card_arrival card_arrival card_lost" in failures  # gold, reference, candidate
    assert "quant c4 card_arrival card_arrival top_up_failed" in failures


def test_notebook_shows_a_tool_calling_runs_calls(tmp_path, monkeypatch):
    run_dir = kind_runs.tool_calling_run(tmp_path)
    text = output_text(execute(run_dir, monkeypatch))
    assert "task kind: tool_calling" in text
    assert "2 failing case x variant pair(s)" in text  # t0 and t3
    failures = re.sub(r"\s+", " ", text.replace("&quot;", '"'))
    assert (
        'quant t0 get_weather(city="Paris") get_weather(city="Paris") get_weather(city="Bergen")' in failures
    )
    assert 'quant t3 no call no call get_weather(city="Oslo")' in failures


def test_notebook_opens_the_task_of_a_suite_it_is_given(tmp_path, monkeypatch):
    suite_dir = make_suite(tmp_path)
    monkeypatch.setenv("QUANTGATE_TASK", "texts")
    text = output_text(execute(suite_dir, monkeypatch))
    assert f"suite {suite_dir}: tasks intents, texts; set TASK to explore another" in text
    assert "task kind: generation" in text
    assert "chrF" in text  # the failures' score column, named as the kind scores it
    assert kind_runs.TEXTS["name[B]"] in text  # the gold text of g1, which quant did not answer


def test_notebook_shows_token_fidelitys_tail(tmp_path, monkeypatch):
    scores = [{"a": 1.0}] * 4
    run_dir = make_run(tmp_path / "run", {"R": scores, "Q4": scores}, footprints={"R": 2, "Q4": 1})
    with_token_fidelity(run_dir, {"Q4": [TAIL_CASE_A]})
    text = re.sub(r"\s+", " ", output_text(execute(run_dir, monkeypatch)))
    assert "KLD mean KLD p99 largest drop top-1 structural top-1 value" in text  # the fidelity tables' titles
    assert "Q4 0.1125 0.3889 -30.0 66.7% 100.0%" in text  # KLD p99 0.3889, largest drop -30 points
    assert "R — — — — —" in text  # the reference: not measured
