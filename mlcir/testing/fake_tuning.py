"""Stand-ins for the tuner's builder, for tests whose runner times candidates without running
them (a known function of the decisions), so a search's result is exact and reproducible."""

from __future__ import annotations

from typing import Any

from mlcir.tune import BuildResult


class NothingBuilt:
    """A builder for runners that need no library: builds nothing."""

    workers = 1

    def prepare(self, workload: str, kernel: Any) -> None:
        pass

    def build_candidate(self, _workload: str, _trace: dict[str, Any]) -> BuildResult:
        return BuildResult(build_secs=0.0)

    def close(self) -> None:
        pass
