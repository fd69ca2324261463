"""`quantgate load` and `quantgate embed` through `RayExecutor` on a local Ray, with the
`slow-server` fake: the same figures as here, what comes back from the tasks, and tasks that die."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quantgate.cluster import RayExecutor
from quantgate.embeddings import EmbeddingOptions, run_embeddings
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantExecutor
from quantgate.inputs._corpus import load_corpus
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.loadtest._level_specs import parse_levels
from quantgate.loadtest._levels import LoadOptions
from quantgate.loadtest._loadtest_run import run_load_test
from quantgate.rundir._embedding_files import EmbeddingsFile
from quantgate.rundir._files import EMBEDDINGS_JSON, LOAD_FILE
from quantgate.rundir._jsonfile import read_model
from quantgate.rundir._store import load_run
from tests.quantgate.cluster.conftest import slow_variants

pytestmark = pytest.mark.slow

_VARIANTS = slow_variants("ref", "cand", backend="slow-server", resources={"CPU": 0.5, "ollama": 0.5})


def _load(invoices: Path, variants: VariantSet, out: Path, executor: VariantExecutor) -> Path:
    options = LoadOptions(levels=parse_levels("normal=1,peak=2"), requests=4, cases=2)
    return run_load_test(load_dataset(invoices), variants, options=options, out=out, executor=executor)


def _requests(run_dir: Path) -> list[tuple[str, str, str | None]]:
    lines = [json.loads(line) for line in (run_dir / LOAD_FILE).read_text().splitlines()]
    return sorted((r["variant"], r["level"], r["error_kind"]) for r in lines)


def test_a_load_through_ray_has_the_local_requests_and_entries(ray_cluster, invoices, tmp_path):
    local = _load(invoices, _VARIANTS, tmp_path / "local", LocalExecutor())
    with RayExecutor.connect(progress=False) as executor:
        distributed = _load(invoices, _VARIANTS, tmp_path / "ray", executor)
    assert _requests(distributed) == _requests(local)
    assert len(_requests(distributed)) == 2 * 2 * 4  # sent back from the tasks, written here
    section, local_section = load_run(distributed).summary.load, load_run(local).summary.load
    assert section is not None
    assert local_section is not None
    assert [(v.name, v.status) for v in section.variants] == [("ref", "ok"), ("cand", "ok")]
    counts = [[(level.name, level.requests, level.errors) for level in v.levels] for v in section.variants]
    assert counts == [[(lv.name, lv.requests, lv.errors) for lv in v.levels] for v in local_section.variants]


def test_a_load_whose_task_keeps_dying_skips_its_variant_and_the_others_go_on(
    ray_cluster, invoices, tmp_path
):
    doomed = _VARIANTS.variants[1].model_copy(update={"options": {"delay_s": 0.05, "die_after": 1}})
    variants = VariantSet(reference="ref", variants=[_VARIANTS.variants[0], doomed])
    with RayExecutor.connect(retries=1, progress=False) as executor:
        run_dir = _load(invoices, variants, tmp_path, executor)
    section = load_run(run_dir).summary.load
    assert section is not None
    ref, cand = section.variants
    assert ref.status == "ok"
    assert cand.status == "skipped"
    assert "load of variant cand: its Ray task died" in str(cand.error)
    assert "after 2 attempts" in str(cand.error)
    assert {variant for variant, _, _ in _requests(run_dir)} == {"ref"}


def _figures(run_dir: Path) -> list[dict[str, Any]]:
    document = read_model(run_dir / EMBEDDINGS_JSON, EmbeddingsFile)
    assert document.status == "complete"
    timing = {"runtime", "embeddings_per_s", "index_build_s", "index_disk_bytes"}
    return [
        {
            "name": v.name,
            "status": v.status,
            **(v.embeddings.model_dump(exclude=timing) if v.embeddings else {}),
        }
        for v in document.variants
    ]


def test_embeddings_through_ray_have_the_local_figures(ray_cluster, invoices, tmp_path):
    corpus = load_corpus(invoices)
    options = EmbeddingOptions(k=2, progress=False)
    variants = _VARIANTS.variants
    local = run_embeddings(
        corpus, variants, out=tmp_path / "local", options=options, executor=LocalExecutor()
    )
    with RayExecutor.connect(progress=False) as executor:
        distributed = run_embeddings(
            corpus, variants, out=tmp_path / "ray", options=options, executor=executor
        )
    figures = _figures(distributed)
    assert figures == _figures(local)
    assert [(f["name"], f["status"]) for f in figures] == [("ref", "ok"), ("cand", "ok")]
    assert figures[1]["cosine_mean"] == pytest.approx(1.0)  # the same fake: the same vectors
    document = read_model(distributed / EMBEDDINGS_JSON, EmbeddingsFile)
    pids = {v.embeddings.runtime["pid"] for v in document.variants if v.embeddings}
    assert len(pids) == 2  # each embedded in a task of its own
