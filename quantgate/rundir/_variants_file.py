"""variants.json: each variant's spec, what served it, where it ran, and its model file's shape
(`VariantsFile`). Written when the run starts and after each variant; `quantgate.rundir._summary`
re-exports its types for the modules that read both files."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from quantgate.capacity._shape_record import MemoryModelEntry
from quantgate.inputs._variants import VariantSpec
from quantgate.rundir._files import VARIANTS_FORMAT_VERSION
from quantgate.rundir._lines import RunFileModel

__all__ = ["Placement", "ShardPlacement", "VariantMetadata", "VariantsFile"]


class ShardPlacement(RunFileModel):
    """Where one task of a variant whose cases were split between tasks (`shards`) ran, and which
    of the cases it measured."""

    node_id: str | None = Field(default=None, description="The Ray node's id.")
    node_ip: str | None = Field(default=None, description="The Ray node's address.")
    hostname: str | None = Field(default=None, description="The node's host name.")
    hardware: dict[str, Any] | None = Field(default=None, description="The node's hardware.")
    case_ids: list[str] = Field(default_factory=list, description="The cases this task recorded.")
    attempts: int = Field(default=1, description="Tasks started for this shard (more after one died).")
    started_at: float | None = Field(default=None, description="When its last task started (Unix time).")
    ended_at: float | None = Field(default=None, description="When its last task ended (Unix time).")
    niceness: int | None = Field(default=None, description="The task process's niceness.")
    error: str | None = Field(default=None, description="Why this shard failed (None: it did not).")


class Placement(RunFileModel):
    """Where a variant was evaluated: in a worker process of the machine that ran quantgate, or
    in a task on a node of a Ray cluster (the node's own `hardware` is in the variant's line), or
    in several tasks when its cases were split between them (`shards`)."""

    executor: Literal["local", "ray"]
    node_id: str | None = Field(default=None, description="The Ray node's id.")
    node_ip: str | None = Field(default=None, description="The Ray node's address.")
    attempts: int = Field(default=1, description="Tasks started for the variant (more after a task died).")
    resources: dict[str, float] = Field(
        default_factory=dict,
        description="The Ray resources each task declared (CPU, memory bytes, GPU, ...).",
    )
    started_at: float | None = Field(default=None, description="When the last task started (Unix time).")
    ended_at: float | None = Field(default=None, description="When the last task ended (Unix time).")
    niceness: int | None = Field(
        default=None,
        description="The task process's niceness (Ray starts workers at 15 unless RAY_worker_niceness "
        "says otherwise; above 0 a busy node gives the task less CPU, slowing its latency figures).",
    )
    shards: list[ShardPlacement] = Field(
        default_factory=list,
        description="The tasks its cases were split between, each on its node (empty: one task). The "
        "variant's line then has the first shard's hardware; its memory figures are the largest "
        "shard's, its throughput the mean per task (output tokens over the tasks' summed wall time).",
    )


class VariantMetadata(VariantSpec):
    """One variant in variants.json: its spec (provenance), what served it, on what machine."""

    runtime: dict[str, Any] | None = None
    hardware: dict[str, Any] | None = None
    placement: Placement | None = Field(
        default=None, description="Where it was evaluated; None in runs written before it was recorded."
    )
    error: str | None = Field(default=None, description="Why the variant could not be evaluated.")
    memory_model: MemoryModelEntry | None = Field(
        default=None,
        description="Its model file's shape and size, read when the run started, for the capacity gate "
        "and figures; None: not an embedded GGUF, or a run written before variants.json 4.",
    )


class VariantsFile(RunFileModel):
    """variants.json."""

    older_format_versions: ClassVar[tuple[int, ...]] = (1, 2, 3)
    format_version: Literal[4] = VARIANTS_FORMAT_VERSION
    variants: list[VariantMetadata] = Field(default_factory=list)

    def by_name(self) -> dict[str, VariantMetadata]:
        """The variants by name."""
        return {v.name: v for v in self.variants}
