"""Embedding evaluation of several variants against the reference, in a run directory.

`embed_variants` embeds the corpus with the reference first, then each other variant,
and scores each against the reference. A variant that cannot embed is skipped with its
error (the reference cannot be: nothing could be compared). Two callers:

- `run_embeddings` (`quantgate embed`): a run directory of its own, `embeddings.json`
  (rewritten after each variant, `status` ending `complete` or `interrupted`) and the
  Qdrant store `qdrant/`;
- `add_embeddings` (`quantgate run --embeddings`): the run's own case texts, each variant's
  figures under `embeddings` in its summary.json entry, the store in the run's `qdrant/`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version as package_version
from pathlib import Path

from evaluators.errors import UsageError
from quantgate._hardware import hardware
from quantgate.backends import BackendError
from quantgate.embeddings._index import VectorIndex, VectorStoreError
from quantgate.embeddings._variant_vectors import (
    EmbeddedVariant,
    EmbeddingError,
    EmbedJob,
    embed_corpus,
    index_vectors,
    score_variant,
)
from quantgate.evaluate._signals import stop_on_signals
from quantgate.evaluate.scheduler._executor import Called, LocalExecutor, VariantCall, VariantExecutor
from quantgate.inputs._corpus import Corpus, load_corpus
from quantgate.inputs._variants import Variant
from quantgate.rundir._embedding_files import DEFAULT_K, CorpusInfo, EmbeddingsFile, EmbeddingVariantEntry
from quantgate.rundir._files import DATASET_DIR, EMBEDDINGS_JSON, QDRANT_DIR, SUMMARY_FILE
from quantgate.rundir._jsonfile import write_model
from quantgate.rundir._store import new_run_id, read_summary
from quantgate.rundir._summary import RunSummary

__all__ = ["DEFAULT_K", "EmbeddingOptions", "add_embeddings", "embed_variants", "run_embeddings"]


@dataclass(frozen=True, kw_only=True)
class EmbeddingOptions:
    """How the embeddings are evaluated.

    Attributes:
        k: Neighbours and retrieved documents per query.
        qdrant_url: A Qdrant server to index in; None: a local store in the run directory.
        progress: Progress bars on stderr.
    """

    k: int = DEFAULT_K
    qdrant_url: str | None = None
    progress: bool = True


def _entry(variant: Variant, *, is_reference: bool) -> EmbeddingVariantEntry:
    return EmbeddingVariantEntry(
        name=variant.name,
        backend=variant.backend,
        quantization=variant.quantization,
        file_size_bytes=variant.file_size_bytes,
        is_reference=is_reference,
    )


def embed_variants(
    variants: Sequence[Variant],
    corpus: Corpus,
    index: VectorIndex,
    *,
    reference: str,
    options: EmbeddingOptions,
    on_entry: Callable[[EmbeddingVariantEntry], None] = lambda entry: None,
    executor: VariantExecutor | None = None,
) -> list[EmbeddingVariantEntry]:
    """Embed and score every variant, the reference first; `on_entry` sees each finished entry.

    The executor embeds (by default here, one after another; a Ray executor in tasks with the
    variants' resources, side by side); the vectors are indexed and scored here, each variant's
    once the reference's are.

    Raises:
        BackendError, EmbeddingError, VectorStoreError: The reference could not embed.
        UsageError: No variant is called `reference`.
    """
    by_name = {v.name: v for v in variants}
    if reference not in by_name:
        raise UsageError(f"no variant called {reference!r} (variants: {', '.join(by_name)})")
    executor = executor or LocalExecutor()
    order = [by_name[reference], *(v for v in variants if v.name != reference)]
    calls = [
        VariantCall(
            variant=variant,
            function=embed_corpus,
            argument=EmbedJob(
                variant=variant, corpus=corpus, progress=options.progress and not executor.remote
            ),
            what=f"embeddings of variant {variant.name}",
            failures=(BackendError, EmbeddingError),
        )
        for variant in order
    ]
    base: EmbeddedVariant | None = None
    waiting: list[Called[EmbeddedVariant]] = []
    entries: list[EmbeddingVariantEntry] = []
    for called in executor.call_each(calls):
        if called.call.variant.name == reference:
            if called.result is None:
                raise EmbeddingError(str(called.error))
            base = index_vectors(called.result, corpus, index)
            waiting.insert(0, called)
        else:
            waiting.append(called)
        if base is not None:
            for ended in waiting:
                is_reference = ended.call.variant.name == reference
                entries.append(_scored(ended, base, corpus, index, options, is_reference=is_reference))
                on_entry(entries[-1])
            waiting.clear()
    return entries


def _scored(
    called: Called[EmbeddedVariant],
    base: EmbeddedVariant,
    corpus: Corpus,
    index: VectorIndex,
    options: EmbeddingOptions,
    *,
    is_reference: bool,
) -> EmbeddingVariantEntry:
    """A variant's entry: its figures against the reference (`base`, indexed), or why it was skipped."""
    variant = called.call.variant
    entry = _entry(variant, is_reference=is_reference)
    error = called.error
    if called.result is not None:
        try:
            embedded = base if is_reference else index_vectors(called.result, corpus, index)
        except VectorStoreError as exc:
            error = str(exc)
        else:
            figures = score_variant(embedded, base, corpus, index, k=options.k)
            return entry.model_copy(update={"embeddings": figures})
    print(f"quantgate: warning: {error}; variant {variant.name} skipped", file=sys.stderr)
    return entry.model_copy(update={"status": "skipped", "error": str(error)})


def _open_index(run_dir: Path, options: EmbeddingOptions) -> VectorIndex:
    if options.qdrant_url is not None:
        return VectorIndex(url=options.qdrant_url)
    return VectorIndex(path=run_dir / QDRANT_DIR)


def _new_document(
    run_dir: Path, corpus: Corpus, *, reference: str, options: EmbeddingOptions
) -> EmbeddingsFile:
    """embeddings.json of a run that starts."""
    return EmbeddingsFile(
        run_id=run_dir.name,
        quantgate_version=package_version("quantgate"),
        status="running",
        corpus=CorpusInfo(
            name=corpus.name,
            source=corpus.source,
            sha256=corpus.sha256,
            documents=len(corpus.documents),
            queries=len(corpus.queries),
        ),
        k=options.k,
        reference=reference,
        store=options.qdrant_url or QDRANT_DIR,
        hardware=hardware(),
    )


def run_embeddings(
    corpus: Corpus,
    variants: Sequence[Variant],
    *,
    reference: str | None = None,
    out: Path = Path("runs"),
    options: EmbeddingOptions | None = None,
    executor: VariantExecutor | None = None,
) -> Path:
    """Evaluate the variants' embeddings on `corpus` in a new run directory under `out`; the
    executor embeds (by default here; a Ray executor in tasks on the cluster).

    Returns:
        The run directory (embeddings.json, and qdrant/ for a local store).

    Raises:
        KeyboardInterrupt: Stopped by a signal; embeddings.json says `interrupted` and keeps the
            variants finished before it.
        BackendError, EmbeddingError, VectorStoreError: The reference could not embed, or the
            store could not be opened; embeddings.json says `failed`, with the error.
    """
    options = options or EmbeddingOptions()
    run_dir = out / new_run_id()
    run_dir.mkdir(parents=True)
    name = reference or variants[0].name
    document = _new_document(run_dir, corpus, reference=name, options=options)
    path = run_dir / EMBEDDINGS_JSON
    write_model(path, document)

    def keep(entry: EmbeddingVariantEntry) -> None:
        document.variants.append(entry)
        write_model(path, document)

    try:
        with stop_on_signals(), _open_index(run_dir, options) as index:
            embed_variants(
                variants, corpus, index, reference=name, options=options, on_entry=keep, executor=executor
            )
    except KeyboardInterrupt:
        write_model(path, document.model_copy(update={"status": "interrupted"}))
        print(f"quantgate: the embeddings so far are in {run_dir}", file=sys.stderr)
        raise
    except Exception as exc:  # the reference or the store failed: say so in the file, then to the caller
        write_model(path, document.model_copy(update={"status": "failed", "error": str(exc)}))
        raise
    write_model(path, document.model_copy(update={"status": "complete"}))
    return run_dir


def add_embeddings(
    run_dir: Path,
    variants: Sequence[Variant],
    *,
    options: EmbeddingOptions | None = None,
    executor: VariantExecutor | None = None,
) -> RunSummary:
    """Evaluate the embeddings of a run's variants on its own case texts, into its summary.json;
    the executor embeds (by default here; a Ray executor in tasks on the cluster).

    Skipped variants of the run are skipped here too. When the reference cannot embed or the
    store cannot be opened, every variant's `embeddings_error` says why and nothing else
    changes: the run stays decidable (its embedding gates, if set, are not measured).

    Returns:
        The updated summary.
    """
    options = options or EmbeddingOptions()
    summary = read_summary(run_dir)
    corpus = load_corpus(run_dir / DATASET_DIR)
    evaluated = {v.name for v in summary.variants if v.status == "ok"}
    chosen = [v for v in variants if v.name in evaluated]
    reference = summary.reference or chosen[0].name

    def keep(entry: EmbeddingVariantEntry) -> None:
        target = summary.entry(entry.name)
        if target is not None:
            target.embeddings = entry.embeddings
            target.embeddings_error = entry.error
            write_model(run_dir / SUMMARY_FILE, summary)

    try:
        with stop_on_signals(), _open_index(run_dir, options) as index:
            embed_variants(
                chosen, corpus, index, reference=reference, options=options, on_entry=keep, executor=executor
            )
    except (BackendError, EmbeddingError, VectorStoreError) as exc:
        print(f"quantgate: warning: embeddings not measured: {exc}", file=sys.stderr)
        for entry in summary.variants:
            if entry.status == "ok":
                entry.embeddings_error = f"not measured: {exc}"
        write_model(run_dir / SUMMARY_FILE, summary)
    return summary
