"""What a backend does with a model for one target, stage by stage (docs/architecture.md).

A :class:`BuildPlan` is the backend's answer to "how is this built for that target": the graph
pipeline to loop-level kernels (its layout numbers taken from the target's facts), the policy
that schedules a kernel without a tuning record, and the codegen pipeline from scheduled kernels
to the lowered module. :func:`mlcir.targets.stages.run_stages` carries a module through it; the
build, ``mlcir compile --dump-mlir`` and the tuner's task extraction all take their kernels
from the same plan, so they see the same kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from mlir import ir

from mlcir.passes.pipelines import LAYOUTS
from mlcir.schedule import Schedule
from mlcir.target import Target

# The stages a module goes through; ``mlcir compile --dump-mlir STAGE`` prints any of them.
STAGES = ("graph", "kernels", "scheduled", "lowered")


@dataclass(frozen=True)
class BuildPlan:
    """How ``target`` builds a module (module docstring)."""

    target: Target
    layout: str
    kernels: str                                   # graph level -> loop-level kernels
    codegen: str                                   # scheduled kernels -> lowered module
    default_schedule: Callable[[ir.Module], Schedule]  # a kernel without a record

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")


class RecordSource(Protocol):
    """Where tuned schedules come from (a tuning database, a records file: mlcir.tune)."""

    def trace_for(self, workload: ir.Module, target: Target) -> dict[str, Any] | None:
        """The trace (JSON form) of the fastest record of ``workload`` measured on ``target``,
        or None."""

    def specialized_shapes(self) -> dict[str, list[dict[str, list[int]]]]:
        """The static input shapes tuned per public function (``{function: [{input: shape}]}``):
        a build adds a static copy of the function for each."""
