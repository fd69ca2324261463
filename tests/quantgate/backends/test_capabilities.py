"""Backend capabilities: what each backend declares, and callers asking them, not the name."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import quantgate.backends.langchain as langchain_backend
import quantgate.backends.llamacpp as llamacpp_backend
import quantgate.backends.ollama as ollama_backend
import quantgate.evaluate.scheduler._variant as evaluate_variant
import quantgate.evaluate.token_fidelity._run_step as fidelity_step
import quantgate.loadtest._loadtest_run as load_run_module
from quantgate.backends import (
    BackendCapabilities,
    OpenedVariant,
    backend_capabilities,
    capabilities,
)
from quantgate.backends.ollama._ollama_forcing import LOGPROBS_FORCING as OLLAMA_FORCING
from quantgate.backends.openai._openai_forcing import LOGPROBS_FORCING as OPENAI_FORCING
from quantgate.backends.openai._openai_verify import NO_VERIFICATION
from quantgate.evaluate._options import RunOptions
from quantgate.evaluate.scheduler._executor import LocalExecutor, VariantCall
from quantgate.evaluate.token_fidelity._job import FidelityJob
from quantgate.evaluate.token_fidelity._run_step import token_fidelity_step, unmeasured_reason
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._variants import Variant
from quantgate.loadtest._level_specs import parse_levels
from quantgate.loadtest._levels import LoadJob, LoadOptions, load_variant
from quantgate.render._load_table import render_load
from quantgate.rundir._loadtest_section import LoadLevelSpec, LoadSection, LoadVariantEntry
from quantgate.rundir._summary import TokenFidelityEntry, VariantEntry
from tests.fakes import GOOD, QueuedChatModel

QUANTGATE = Path(__file__).resolve().parents[3] / "quantgate"


@pytest.fixture
def fake_backend(register_backend: Any) -> Any:
    """`register(capabilities)` registers a backend `fake` over fake chat models for the test; it
    counts opens."""
    opens: list[str] = []

    @contextmanager
    def open_fake(
        variant: Variant, schema: Mapping[str, Any], *, slots: int | None = None
    ) -> Iterator[OpenedVariant]:
        opens.append(variant.name)
        yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]))

    def register(declared: BackendCapabilities | None) -> list[str]:
        register_backend("fake", open_fake, capabilities=declared)
        return opens

    return register


def test_built_in_backends_declare_their_capabilities():
    assert backend_capabilities("llamacpp") == BackendCapabilities(
        token_fidelity="logits", process_isolation=True, parallel="slots", default_concurrency=4,
        memory="process", embeddings=True, model_file=True, from_python=False, kv_cache="applied",
        json_schema=True, verification=True,
    )  # fmt: skip
    assert backend_capabilities("ollama") == BackendCapabilities(
        token_fidelity="logprobs", logprobs_forcing=OLLAMA_FORCING, process_isolation=True, parallel="server",
        memory="server", embeddings=True, model_file=False, from_python=False, default_concurrency=1,
        kv_cache="declared", json_schema=True, no_verification=ollama_backend.CAPABILITIES.no_verification,
    )  # fmt: skip
    assert backend_capabilities("openai") == BackendCapabilities(
        token_fidelity="logprobs", logprobs_forcing=OPENAI_FORCING, process_isolation=True, parallel="server",
        memory="server", embeddings=False, model_file=False, from_python=False, default_concurrency=1,
        kv_cache=None, json_schema=True, verification=False, no_verification=NO_VERIFICATION,
    )  # fmt: skip
    assert backend_capabilities("langchain") == BackendCapabilities(
        token_fidelity=None, process_isolation=False, parallel="none", memory="process", embeddings=False,
        model_file=False, from_python=True, kv_cache=None, json_schema=False,
    )  # fmt: skip


def test_capabilities_are_asked_before_opening():
    assert capabilities(Variant(name="e", backend="llamacpp", model="e")) == llamacpp_backend.CAPABILITIES
    assert capabilities(Variant(name="q4", backend="ollama", model="g:1b")) == ollama_backend.CAPABILITIES
    chat = Variant.from_chat_model("chat", QueuedChatModel(outputs=["{}"]))
    assert capabilities(chat) == langchain_backend.CAPABILITIES
    # a chat model object never crosses processes and exposes no logits, whatever the backend says
    odd = Variant(name="odd", backend="llamacpp", chat_model=QueuedChatModel(outputs=["{}"]))
    assert (capabilities(odd).token_fidelity, capabilities(odd).process_isolation) == (None, False)
    # an unknown backend declares nothing (opening it is what fails)
    assert capabilities(Variant(name="x", backend="nowhere")) == BackendCapabilities()


def test_capabilities_are_frozen():
    with pytest.raises(AttributeError):
        llamacpp_backend.CAPABILITIES.parallel = "none"  # type: ignore[misc]


def test_a_backend_registered_without_capabilities_declares_nothing(fake_backend):
    fake_backend(None)
    assert backend_capabilities("fake") == BackendCapabilities(
        token_fidelity=None, process_isolation=False, parallel="none", memory="process", embeddings=False
    )


def test_unmeasured_reason_asks_the_capabilities(fake_backend):
    fake = Variant(name="f", backend="fake")
    fake_backend(BackendCapabilities(token_fidelity=None, process_isolation=False, parallel="none"))
    assert unmeasured_reason(fake, fake, enabled=True) == "not measured: the fake backend exposes no logits"

    fake_backend(BackendCapabilities(token_fidelity="logprobs"))
    assert unmeasured_reason(fake, fake, enabled=True) is None
    ollama = Variant(name="o", backend="ollama", model="g:1b")  # same kind, another backend
    for variant, reference in ((fake, ollama), (ollama, fake)):
        reason = unmeasured_reason(variant, reference, enabled=True) or ""
        assert "must be served by the same backend" in reason


def test_built_in_reasons_keep_their_texts():
    embedded = Variant(name="e", backend="llamacpp", model="e.gguf")
    chat = Variant.from_chat_model("chat", QueuedChatModel(outputs=["{}"]))
    no_logits = "not measured: the langchain backend exposes no logits"
    assert unmeasured_reason(chat, embedded, enabled=True) == no_logits
    assert unmeasured_reason(embedded, chat, enabled=True) == (
        "not measured: the reference (langchain) and this variant (llamacpp) "
        "must be served by the same backend to read the same prompt"
    )


def _ok_entry(variant: Variant, *, is_reference: bool = False) -> VariantEntry:
    return VariantEntry(name=variant.name, backend=variant.backend, is_reference=is_reference)


def test_fidelity_dispatch_groups_targets_by_kind(fake_backend, dataset, tmp_path, monkeypatch):
    fake_backend(BackendCapabilities(token_fidelity="logprobs"))
    reference, variant = Variant(name="ref", backend="fake"), Variant(name="v", backend="fake")
    record = SimpleNamespace(raw=json.dumps(GOOD), attempts=1, error=None)
    monkeypatch.setattr(fidelity_step, "read_records", lambda run_dir: [])
    monkeypatch.setattr(fidelity_step, "latest_records", lambda records: {"ref": {"c0": record}})
    calls: dict[str, list[str]] = {}

    def measuring(kind: str) -> Callable[[FidelityJob], dict[str, TokenFidelityEntry]]:
        def measure(job: FidelityJob) -> dict[str, TokenFidelityEntry]:
            calls[kind] = [v.name for v in job.variants]
            return {}

        return measure

    for kind in ("logits", "logprobs"):
        monkeypatch.setitem(fidelity_step._MEASURES, kind, measuring(kind))
    entries = [_ok_entry(reference, is_reference=True), _ok_entry(variant)]
    token_fidelity_step(dataset=dataset, cases=dataset.cases, variants=[reference, variant],
                        reference_name="ref", entries=entries, run_dir=tmp_path, enabled=True,
                        max_repairs=0, progress=False)  # fmt: skip
    assert calls == {"logprobs": ["v"]}


def _load_job(data: Dataset, variant: Variant, tmp_path: Path, levels: str = "normal=1,peak=3") -> LoadJob:
    options = LoadOptions(levels=parse_levels(levels), requests=3)
    return LoadJob(variant=variant, dataset=data, cases=tuple(data.cases), options=options,
                   records_path=tmp_path / "load.jsonl")  # fmt: skip


def _record_ways(monkeypatch: pytest.MonkeyPatch, module: Any, here: str) -> list[str]:
    """Replace `module.<here>` and `module.run_isolated`; the list says which ran."""
    ways: list[str] = []

    def in_process(job: Any) -> Any:
        ways.append("here")
        return job

    def in_worker(function: Any, job: Any, **kwargs: Any) -> Any:
        ways.append("worker")
        return job

    monkeypatch.setattr(module, here, in_process)
    monkeypatch.setattr(module, "run_isolated", in_worker)
    return ways


@pytest.mark.parametrize(("parallel", "copies"), [("instances", 3), ("server", 1), ("none", 1)])
def test_a_registered_backend_gets_copies_only_with_parallel_instances(fake_backend, dataset, tmp_path,
                                                                       parallel, copies):  # fmt: skip
    opens = fake_backend(BackendCapabilities(parallel=parallel))
    entry = load_variant(_load_job(dataset, Variant(name="f", backend="fake"), tmp_path))
    assert entry.status == "ok"
    assert len(opens) == entry.instances == copies
    assert [level.instances for level in entry.levels] == [1, copies]
    assert (entry.instance_model_mb is not None) == (parallel == "instances")
    assert entry.memory_process == "quantgate"


def test_memory_of_a_server_backend_without_a_local_pid_is_not_measured(fake_backend, dataset, tmp_path):
    fake_backend(BackendCapabilities(parallel="server", memory="server"))
    entry = load_variant(_load_job(dataset, Variant(name="f", backend="fake"), tmp_path, levels="1"))
    assert entry.memory_process is None


@pytest.mark.parametrize(
    ("declared", "isolated"),
    [
        (BackendCapabilities(process_isolation=True, memory="process"), True),
        (BackendCapabilities(process_isolation=True, memory="server"), False),
        (BackendCapabilities(process_isolation=False, memory="process"), False),
    ],
)
def test_a_load_isolates_by_capabilities(fake_backend, dataset, tmp_path, declared, isolated):
    fake_backend(declared)
    call = load_run_module._load_call(
        _load_job(dataset, Variant(name="f", backend="fake"), tmp_path), LocalExecutor()
    )
    assert call.isolate is isolated


@pytest.mark.parametrize(
    ("backend", "isolated"), [("llamacpp", True), ("ollama", False), ("langchain", False)]
)
def test_a_load_of_the_built_in_backends(dataset, tmp_path, backend, isolated):
    job = _load_job(dataset, Variant(name="v", backend=backend, model="m"), tmp_path)
    assert load_run_module._load_call(job, LocalExecutor()).isolate is isolated


def _pid(_: object) -> int:
    return os.getpid()


@pytest.mark.parametrize("isolate", [True, False])
def test_the_local_executor_runs_an_isolated_call_in_a_worker_process(isolate):
    call = VariantCall(variant=Variant(name="v", backend="ollama", model="m"), function=_pid, argument=None,
                       what="the pid", isolate=isolate)  # fmt: skip
    (called,) = LocalExecutor().call_each([call])
    assert called.error is None
    assert (called.result != os.getpid()) is isolate


def _variant_job(variant: Variant, data: Dataset, run_dir: Path) -> evaluate_variant.VariantJob:
    """A job of `variant` on no case (what `evaluate_isolated` does with it is what is tested)."""
    return evaluate_variant.VariantJob(
        variant=variant, dataset=data, cases=(), run_dir=run_dir, reference_records=None, options=RunOptions()
    )


@pytest.mark.parametrize(
    ("variant", "isolated"),
    [
        (Variant(name="e", backend="llamacpp", model="e.gguf"), True),
        (Variant(name="o", backend="ollama", model="g:1b"), True),
        (Variant.from_chat_model("chat", QueuedChatModel(outputs=["{}"])), False),
        (Variant(name="f", backend="fake"), False),
    ],
)
def test_evaluation_isolates_by_capabilities(fake_backend, dataset, tmp_path, monkeypatch, variant, isolated):
    fake_backend(BackendCapabilities(process_isolation=False))
    ways = _record_ways(monkeypatch, evaluate_variant, "_evaluate_into_run_dir")
    evaluate_variant.evaluate_isolated(_variant_job(variant, dataset, tmp_path))
    assert ways == (["worker"] if isolated else ["here"])


def test_a_worker_is_told_the_module_that_registers_the_backend(fake_backend, dataset, tmp_path, monkeypatch):
    fake_backend(BackendCapabilities(process_isolation=True))
    sent: list[Any] = []
    monkeypatch.setattr(evaluate_variant, "run_isolated", lambda function, job, **kwargs: sent.append(job))
    evaluate_variant.evaluate_isolated(_variant_job(Variant(name="f", backend="fake"), dataset, tmp_path))
    assert [j.backend_module for j in sent] == [__name__]  # the fake is registered from this module


def test_load_table_note_follows_parallel(fake_backend):
    fake_backend(BackendCapabilities(parallel="instances"))
    entries = [
        LoadVariantEntry(
            name=name,
            backend=backend,
            instances=2,
            instance_model_mb=100.0,
            slots=4,
            memory_process="quantgate",
        )
        for name, backend in (("emb", "llamacpp"), ("f", "fake"), ("srv", "ollama"))
    ]
    section = LoadSection(levels=[LoadLevelSpec(name="1", concurrency=1)], requests_per_level=1,
                          duration_s_per_level=None, max_tokens=None, cases=1, variants=entries)  # fmt: skip
    notes = {line.split(":", 1)[0]: line for line in render_load(section).splitlines()}
    assert "one model copy with 4 slots sharing one KV cache" in notes["emb"]
    assert "2 model instance(s), about 100 MiB each" in notes["f"]
    assert "one shared client; OLLAMA_NUM_PARALLEL=not set here" in notes["srv"]


# a backend compared with a name (a literal, or a loop variable over names), or looked up in names;
# comparing two variants' backends (`reference.backend != variant.backend`) is no name check
_NAME_CHECK = re.compile(
    r"""\.backend\s*(==|!=)\s*(["']|backend\b)|\.backend\s+(not\s+)?in\b|\bbackend\s*==\s*["']"""
)
# none: even the `backend:model` shorthand is read by the backend's own `Shorthand` (inputs/_variants.py)
_KNOWN: set[tuple[str, str]] = set()


def test_callers_ask_capabilities_not_backend_names():
    found = set()
    for path in QUANTGATE.rglob("*.py"):
        relative = path.relative_to(QUANTGATE).as_posix()
        if relative.startswith("backends/"):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if _NAME_CHECK.search(line):
                found.add((relative, line.strip()))
    assert found <= _KNOWN, sorted(found - _KNOWN)
