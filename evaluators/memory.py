"""Memory figures of a variant from process RSS readings (taken by quantgate's sampler).

All values are MiB (2^20 bytes). A reading that was not taken stays None.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.results import EvaluatorResult

MIB = 2**20


@dataclass(frozen=True, kw_only=True)
class MemoryReading:
    """Raw readings around one variant's run.

    Attributes:
        rss_before_load_mb: Process RSS just before the model was loaded.
        rss_after_load_mb: Process RSS just after it was loaded, before any case ran.
        rss_peak_mb: Highest RSS sampled while the variant's cases ran.
        samples: How many samples the peak was taken over.
        file_size_bytes: Size of the model file, when there is one.
        reported_model_bytes: The model's size in memory as its server reports it.
        reported_vram_bytes: The part of it in GPU memory, as its server reports it.
        process: Which process the RSS readings are of.
    """

    rss_before_load_mb: float | None = None
    rss_after_load_mb: float | None = None
    rss_peak_mb: float | None = None
    samples: int = 0
    file_size_bytes: int | None = None
    reported_model_bytes: int | None = None
    reported_vram_bytes: int | None = None
    process: str | None = None


class MemorySummary(EvaluatorResult):
    """What the reports show.

    Attributes:
        memory_mb: Peak RSS during inference of the process that holds the model: the
            quantgate worker (embedded: model, KV cache, harness, Python) or a local server's
            process tree (Ollama); None for a remote server.
        model_memory_mb: RSS growth caused by loading the model when it loads in the measured
            process; otherwise the model size the server reports.
        file_size_mb: Model file size.
        vram_mb: The part of the model in GPU memory, as the server reports it.
        memory_process: Which process `memory_mb` is of.
    """

    memory_mb: float | None = None
    model_memory_mb: float | None = None
    file_size_mb: float | None = None
    vram_mb: float | None = None
    memory_process: str | None = None


def summarize_memory(reading: MemoryReading) -> MemorySummary:
    """Turn raw readings into the reported figures."""
    before, after = reading.rss_before_load_mb, reading.rss_after_load_mb
    model = after - before if before is not None and after is not None else _mib(reading.reported_model_bytes)
    return MemorySummary(
        memory_mb=reading.rss_peak_mb if reading.samples else None,
        model_memory_mb=model,
        file_size_mb=_mib(reading.file_size_bytes),
        vram_mb=_mib(reading.reported_vram_bytes),
        memory_process=reading.process if reading.samples else None,
    )


def _mib(size: int | None) -> float | None:
    return size / MIB if size is not None else None
