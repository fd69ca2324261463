"""Memory figures of a variant from process RSS readings (taken by quantgate's sampler).

All values are MiB (2^20 bytes). A reading that was not taken stays None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

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
    """

    rss_before_load_mb: float | None = None
    rss_after_load_mb: float | None = None
    rss_peak_mb: float | None = None
    samples: int = 0
    file_size_bytes: int | None = None


@dataclass(frozen=True, kw_only=True)
class MemorySummary:
    """What the reports show.

    Attributes:
        memory_mb: Peak process RSS during inference (model, KV cache, harness, Python).
        model_memory_mb: RSS growth caused by loading the model (weights read into memory).
        file_size_mb: Model file size.
    """

    memory_mb: float | None
    model_memory_mb: float | None
    file_size_mb: float | None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def summarize_memory(reading: MemoryReading) -> MemorySummary:
    """Turn raw readings into the reported figures."""
    before, after = reading.rss_before_load_mb, reading.rss_after_load_mb
    return MemorySummary(
        memory_mb=reading.rss_peak_mb if reading.samples else None,
        model_memory_mb=after - before if before is not None and after is not None else None,
        file_size_mb=reading.file_size_bytes / MIB if reading.file_size_bytes is not None else None,
    )
