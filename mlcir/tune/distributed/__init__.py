"""Distributed tuning on a Ray cluster: builds as Ray tasks on its nodes, measurements in one
actor per node whose hardware fingerprint matches the target's (docs/tuning.md, distributed
tuning). Ray is optional (``pip install mlcir[ray]``): it is imported only when a cluster is
used.
"""

from __future__ import annotations

from .coordinator import RayCoordinator
from .fingerprint import host_fingerprint, resource_name, target_fingerprint
from .roles import RayBuilder, RayRunner

__all__ = ["RayBuilder", "RayCoordinator", "RayRunner", "host_fingerprint", "resource_name",
           "target_fingerprint"]
