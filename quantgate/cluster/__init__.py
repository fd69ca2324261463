"""Fanning a run out over a Ray cluster (`RayExecutor`): each variant kept warm in a Ray actor on a
node that has the resources it declares, driven in the local run's rounds, its records sent back to
the driver that writes the run."""

from quantgate.cluster._connection import ClusterError
from quantgate.cluster._executor import RayExecutor

__all__ = ["ClusterError", "RayExecutor"]
