"""Schedule errors name the primitive, the instruction's position in the trace and the reason."""

from __future__ import annotations

from mlcir.errors import MlcirError


class ScheduleError(MlcirError):
    """A primitive that cannot apply (illegal, or a decision that does not fit), or a schedule
    that the transform dialect cannot express."""
