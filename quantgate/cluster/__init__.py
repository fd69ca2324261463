"""Fanning a run out over a Ray cluster: each variant's evaluation as a Ray task (`RayExecutor`),
with the resources it declares, its records sent back to the driver that writes the run."""

from quantgate.cluster._connection import ClusterError
from quantgate.cluster._executor import RayExecutor

__all__ = ["ClusterError", "RayExecutor"]
