"""The reference cache: a later run with the same reference file, dataset, prompt and decoding
settings takes the reference's answers from it; any changed input misses it; `--no-cache` turns
it off."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evaluators.chrf import GenerationSummary
from evaluators.classification_figures import ClassificationSummary
from quantgate.backends import BackendCapabilities, OpenedVariant
from quantgate.evaluate._cache import cache_key, key_inputs
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import KVCache, Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from quantgate.rundir._summary import RunSummary
from tests.fakes import GOOD, SCHEMA, QueuedChatModel, write_classification_dataset
from tests.fakes import write_dataset as write_lines

WRONG = json.dumps({**GOOD, "currency": "USD"})
CASES_ANSWERED: list[str] = []
"""The case texts the `filed` backend's models were asked (warm-ups left out), in order."""


class _CountingModel(QueuedChatModel):
    def _next(self, messages: Any) -> Any:
        text = str(messages[-1].content)
        if text.startswith("case"):
            CASES_ANSWERED.append(text)
        return super()._next(messages)


@contextmanager
def _open_filed(
    variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
) -> Iterator[OpenedVariant]:
    wrong = {"case <1>": WRONG} if variant.options.get("wrong") else {}
    answers = variant.options.get("answers", wrong)  # text -> the model's output
    yield OpenedVariant(
        chat_model=_CountingModel(outputs=[json.dumps(GOOD)], by_text=answers),
        runtime={"name": "filed fake", "version": "0"},
    )


@pytest.fixture(autouse=True)
def filed_backend(register_backend: Any) -> None:
    """A backend `filed` whose variants are model files (it never reads them), run in this process."""
    register_backend("filed", _open_filed, capabilities=BackendCapabilities(model_file=True))
    CASES_ANSWERED.clear()


def _dataset(root: Path, cases: int, *, text: str = "case <{}>") -> Dataset:
    lines = [
        Case(id=f"c{i:02d}", text=text.format(i), expected=GOOD, tags=("lang:en",)) for i in range(cases)
    ]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _variants(
    tmp_path: Path,
    *,
    reference_bytes: bytes = b"reference weights",
    answers: tuple[dict[str, str], dict[str, str]] | None = None,
) -> VariantSet:
    reference, candidate = tmp_path / "ref.gguf", tmp_path / "cand.gguf"
    reference.write_bytes(reference_bytes)
    candidate.write_bytes(b"candidate weights")
    return VariantSet(
        reference="ref",
        variants=[
            Variant(
                name="ref",
                backend="filed",
                model=str(reference),
                quantization="F16",
                options={"answers": answers[0]} if answers else {},
            ),
            Variant(
                name="cand",
                backend="filed",
                model=str(candidate),
                quantization="Q4",
                options={"answers": answers[1]} if answers else {"wrong": 1},
            ),
        ],
    )


def _options(tmp_path: Path, cache: Path | None, **changes: Any) -> RunOptions:
    """The run's options; without verification and without a latency sample unless asked (the latency
    sample is decoded in the run even when the cache holds it:
    `test_the_latency_sample_is_decoded_in_the_run_even_when_cached`)."""
    return RunOptions(
        out=tmp_path / "runs",
        progress=False,
        token_fidelity=False,
        round_size=4,
        reference_cache=cache,
        **{"verify": False, "latency_cases": 0, **changes},
    )


def test_a_second_run_takes_the_reference_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    dataset = _dataset(tmp_path / "d", 8)
    first = run_evaluation(dataset, _variants(tmp_path), options=_options(tmp_path, cache))
    assert len(CASES_ANSWERED) == 16  # both variants answered every case
    CASES_ANSWERED.clear()
    second = run_evaluation(dataset, _variants(tmp_path), options=_options(tmp_path, cache))
    assert len(CASES_ANSWERED) == 8  # only the candidate
    summary = load_run(second).summary
    ref, cand = summary.entry("ref"), summary.entry("cand")
    assert ref is not None
    assert cand is not None
    assert (ref.cases, ref.cached_cases, ref.loads) == (8, 8, 0)
    assert cand.cached_cases is None
    records = [r for r in read_records(second) if r.variant == "ref"]
    assert {r.cached_from for r in records} == {first.name}  # each names the run that evaluated it
    before = {r.case_id: r.raw for r in read_records(first) if r.variant == "ref"}
    assert {r.case_id: r.raw for r in records} == before
    # the reference's figures are as in the first run (its memory: the first run's measurement)
    first_ref = load_run(first).summary.entry("ref")
    assert first_ref is not None
    assert (ref.field_accuracy, ref.memory_mb, ref.load_s) == (
        first_ref.field_accuracy,
        first_ref.memory_mb,
        first_ref.load_s,
    )
    assert cand.field_accuracy_delta == pytest.approx(-1 / 4 / 8)


@pytest.mark.parametrize("verify", [True, False], ids=["verifying", "no-verify"])
def test_the_latency_sample_is_decoded_in_the_run_even_when_cached(tmp_path, verify):
    cache = tmp_path / "cache"
    dataset = _dataset(tmp_path / "d", 8)
    options = _options(tmp_path, cache, verify=verify, latency_cases=2)
    run_evaluation(dataset, _variants(tmp_path), options=options)
    CASES_ANSWERED.clear()
    second = run_evaluation(dataset, _variants(tmp_path), options=options)
    assert sorted(CASES_ANSWERED) == sorted(["case <0>", "case <1>", *(f"case <{i}>" for i in range(8))])
    summary = load_run(second).summary
    ref, cand = summary.entry("ref"), summary.entry("cand")
    assert ref is not None
    assert cand is not None
    assert (ref.cases, ref.cached_cases, ref.loads) == (8, 6, 1)
    assert (ref.cases_timed, cand.cases_timed) == (2, 2)  # the same two cases, decoded in this run
    fresh = {r.case_id for r in read_records(second) if r.variant == "ref" and r.cached_from is None}
    assert fresh == {"c00", "c01"}
    assert summary.options is not None
    assert (summary.options.verify, summary.options.latency_cases) == (verify, 2)


def test_the_cache_serves_what_it_has_and_the_reference_runs_the_rest(tmp_path):
    cache = tmp_path / "cache"
    dataset = _dataset(tmp_path / "d", 12)
    run_evaluation(
        dataset, _variants(tmp_path), options=_options(tmp_path, cache, sequential=True, max_cases=4)
    )
    CASES_ANSWERED.clear()
    second = run_evaluation(dataset, _variants(tmp_path), options=_options(tmp_path, cache))
    ref = load_run(second).summary.entry("ref")
    assert ref is not None
    assert (ref.cases, ref.cached_cases, ref.loads) == (12, 4, 1)
    assert len(CASES_ANSWERED) == 12 + 8  # the candidate's 12, the reference's 8 not cached


@pytest.mark.parametrize(
    "change",
    ["reference file", "dataset", "examples", "max_repairs", "no cache"],
)
def test_a_changed_input_never_hits_the_cache(tmp_path, change):
    cache = tmp_path / "cache"
    dataset = _dataset(tmp_path / "d", 4)
    run_evaluation(dataset, _variants(tmp_path), options=_options(tmp_path, cache))
    variants, options = _variants(tmp_path), _options(tmp_path, cache)
    if change == "reference file":
        variants = _variants(tmp_path, reference_bytes=b"other reference weights")
    elif change == "dataset":
        dataset = _dataset(tmp_path / "d2", 4, text="case <{}>.")
    elif change == "examples":
        lines = list(dataset.cases)
        write_dataset(
            tmp_path / "d3", schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="other", expected=GOOD)]
        )
        dataset = load_dataset(tmp_path / "d3")
    elif change == "max_repairs":
        options = _options(tmp_path, cache, max_repairs=1)
    else:
        options = _options(tmp_path, None)
    CASES_ANSWERED.clear()
    run_dir = run_evaluation(dataset, variants, options=options)
    ref = load_run(run_dir).summary.entry("ref")
    assert ref is not None
    assert (ref.cached_cases, ref.loads) == (None, 1)
    assert len(CASES_ANSWERED) == 8
    assert {r.cached_from for r in read_records(run_dir)} == {None}


def test_the_key_names_what_decides_the_answers(tmp_path):
    from quantgate.evaluate._session import RunSession

    dataset = _dataset(tmp_path / "d", 2)
    variants = _variants(tmp_path)
    session = RunSession.__new__(RunSession)  # only what key_inputs reads
    session.variants, session.reference, session.dataset = variants.variants, "ref", dataset
    session.options = _options(tmp_path, tmp_path / "cache")
    inputs = key_inputs(session)
    assert inputs is not None
    assert set(inputs) == {
        "cache_format", "model_sha256", "backend", "options", "slots", "max_repairs", "dataset_sha256",
        "prompt_prefix_sha256", "quantgate", "llama_cpp_python", "cpu_model", "machine",
    }  # fmt: skip
    assert inputs["dataset_sha256"] == dataset.sha256
    assert len(cache_key(inputs)) == 32
    session.variants = [Variant.from_chat_model("ref", QueuedChatModel(outputs=["{}"]))]
    assert key_inputs(session) is None  # a chat model given from Python has no file to key on


def test_a_reference_with_a_kv_cache_type_has_a_key_of_its_own(tmp_path):
    from quantgate.evaluate._session import RunSession

    session = RunSession.__new__(RunSession)  # only what key_inputs reads
    session.variants, session.reference = _variants(tmp_path).variants, "ref"
    session.dataset, session.options = _dataset(tmp_path / "d", 2), _options(tmp_path, tmp_path / "cache")
    plain = key_inputs(session)
    reference = session.variants[0].model_copy(update={"kv_cache": KVCache(k="q8_0", v="q8_0")})
    session.variants = [reference, *session.variants[1:]]
    cached = key_inputs(session)
    assert plain is not None
    assert cached is not None
    assert "kv_cache" not in plain  # keys of references without one are unchanged
    assert cached == {**plain, "kv_cache": {"k": "q8_0", "v": "q8_0"}}
    assert cache_key(cached) != cache_key(plain)


GOLDS = ["card_lost", "card_arrival", "top_up_failed", "card_lost"]
TEXTS = {"text 0": "A is a place.", "text 1": "B is a place.", "text 2": "C is a town."}


def _labels(*labels: str) -> dict[str, str]:
    return {f"text {i}": json.dumps({"label": label}) for i, label in enumerate(labels)}


def _texts(*texts: str) -> dict[str, str]:
    return {f"text {i}": json.dumps({"text": text}) for i, text in enumerate(texts)}


def _kind_figures(entry: Any) -> dict[str, Any]:
    """An entry's figures of its task kind and accuracy (its timings and memory left out)."""
    assert entry is not None
    figures = entry.model_dump(
        include={"kind_figures", "field_accuracy", "agreement_with_reference", "cases"}
    )
    return dict(figures)


def _twice_with_a_cache(
    tmp_path: Path, dataset: Dataset, answers: tuple[dict[str, str], dict[str, str]]
) -> tuple[RunSummary, RunSummary]:
    """The summaries of two runs of `ref` and `cand` giving `answers` with one cache: the first
    fills it, the second takes the reference from it."""
    options = _options(tmp_path, tmp_path / "cache")
    first, second = [
        run_evaluation(dataset, _variants(tmp_path, answers=answers), options=options) for _ in range(2)
    ]
    return load_run(first).summary, load_run(second).summary


def _key_of(tmp_path: Path, variants: list[Variant]) -> dict[str, Any] | None:
    from quantgate.evaluate._session import RunSession

    session = RunSession.__new__(RunSession)  # only what key_inputs reads
    session.variants, session.reference = variants, "ref"
    session.dataset, session.options = _dataset(tmp_path / "d", 2), _options(tmp_path, tmp_path / "cache")
    return key_inputs(session)


def test_a_served_reference_is_keyed_by_its_model_name(tmp_path):
    """A renamed model on the same server does not hit the cache (issue 46): the name is in the key
    of a served variant, whose file is not read; a model file's key holds its sha256, not its path."""
    served = Variant(name="ref", backend="openai", model="a", sha256="ab" * 32, options={"base_url": "u"})
    renamed = served.model_copy(update={"model": "b"})
    a, b = _key_of(tmp_path, [served]), _key_of(tmp_path, [renamed])
    assert a is not None
    assert b is not None
    assert (a["model"], b["model"]) == ("a", "b")
    assert cache_key(a) != cache_key(b)
    filed = _variants(tmp_path).variants[0]
    moved = filed.model_copy(update={"model": str(tmp_path / "elsewhere.gguf"), "sha256": "cd" * 32})
    assert "model" not in (_key_of(tmp_path, [moved]) or {})


def _cache_files(cache: Path, name: str) -> Path:
    (directory,) = cache.iterdir()
    return directory / name


def test_an_edited_cached_record_is_a_miss_with_a_warning(tmp_path, capsys):
    """Labels set to the gold in a cached record took the reference from 12.5% to 100% (issue 46):
    each record carries its checksum; one that does not match is evaluated again, with a warning,
    and the run that does so keeps a good record, so the warning is said once."""
    cache, dataset = tmp_path / "cache", _dataset(tmp_path / "d", 8)
    variants = _variants(tmp_path, answers=({"case <1>": WRONG}, {}))
    options = _options(tmp_path, cache, latency_cases=1)  # c00 is decoded by every run
    run_evaluation(dataset, variants, options=options)
    records = _cache_files(cache, "records.jsonl")
    lines = records.read_text().splitlines()
    records.write_text("".join(line.replace("USD", "EUR") + "\n" for line in lines))  # c01 made right
    capsys.readouterr()
    CASES_ANSWERED.clear()
    second = run_evaluation(dataset, variants, options=options)
    assert "has 1 record(s) that do not match their checksum (cases c01)" in capsys.readouterr().err
    ref = load_run(second).summary.entry("ref")
    assert ref is not None
    assert ref.cached_cases == 6  # all but the latency sample and the edited case
    assert CASES_ANSWERED.count("case <1>") == 2  # the reference's and the candidate's
    assert ref.field_accuracy == pytest.approx(1 - 1 / 4 / 8)  # not the edit's 100%
    run_evaluation(dataset, variants, options=options)
    assert "checksum" not in capsys.readouterr().err


def test_an_edited_cached_entry_makes_the_whole_key_a_miss(tmp_path, capsys):
    cache, dataset = tmp_path / "cache", _dataset(tmp_path / "d", 8)
    options = _options(tmp_path, cache, latency_cases=1)
    run_evaluation(dataset, _variants(tmp_path), options=options)
    entry = _cache_files(cache, "entry.json")
    sealed = json.loads(entry.read_text())
    sealed.get("content", sealed)["memory_mb"] = 1.0  # {"sha256": ..., "content": the entry}
    entry.write_text(json.dumps(sealed))
    capsys.readouterr()
    second = run_evaluation(dataset, _variants(tmp_path), options=options)
    assert "entry.json does not match its checksum; the whole entry is not used" in capsys.readouterr().err
    ref = load_run(second).summary.entry("ref")
    assert ref is not None
    assert ref.cached_cases is None
    assert ref.memory_mb != 1.0


GOLDS = ["card_lost", "card_arrival", "top_up_failed", "card_lost"]
TEXTS = {"text 0": "A is a place.", "text 1": "B is a place.", "text 2": "C is a town."}


def test_a_cached_classification_reference_scores_as_a_fresh_one(tmp_path):
    # the reference right on all four; the candidate takes c1 (card_arrival) for card_lost
    answers = (_labels(*GOLDS), _labels("card_lost", "card_lost", "top_up_failed", "card_lost"))
    dataset = load_dataset(write_classification_dataset(tmp_path / "banking", GOLDS))
    first, second = _twice_with_a_cache(tmp_path, dataset, answers)
    ref = second.entry("ref")
    assert ref is not None
    labels = ref.kind_figures
    assert isinstance(labels, ClassificationSummary)
    assert (ref.cached_cases, labels.label_accuracy, labels.macro_f1) == (4, 1.0, 1.0)
    assert labels.confusion == [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0]]
    for name in ("ref", "cand"):
        assert _kind_figures(second.entry(name)) == _kind_figures(first.entry(name))
    cand = second.entry("cand")
    assert cand is not None
    assert isinstance(cand.kind_figures, ClassificationSummary)
    assert cand.kind_figures.label_accuracy == pytest.approx(3 / 4)
    # F1: card_arrival 0 (TP 0, FN 1), card_lost 2·2/(2·2+1) = 4/5, top_up_failed 1
    assert cand.kind_figures.macro_f1 == pytest.approx((0 + 4 / 5 + 1) / 3)


def test_a_cached_generation_reference_scores_as_a_fresh_one(tmp_path):
    lines = [{"id": f"g{i}", "text": t, "expected": {"text": g}} for i, (t, g) in enumerate(TEXTS.items())]
    dataset = load_dataset(write_lines(tmp_path / "texts", lines, schema=None, task={"kind": "generation"}))
    answers = (_texts(*TEXTS.values()), _texts("A is a place.", "B is a city.", "C is a town."))
    first, second = _twice_with_a_cache(tmp_path, dataset, answers)
    ref = second.entry("ref")
    assert ref is not None
    assert ref.cached_cases == 3
    assert isinstance(ref.kind_figures, GenerationSummary)
    assert ref.kind_figures.chrf == pytest.approx(1.0)  # the reference's texts are the gold
    for name in ("ref", "cand"):
        assert _kind_figures(second.entry(name)) == _kind_figures(first.entry(name))
