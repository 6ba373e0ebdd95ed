"""Schedule errors name the primitive, the instruction's position in the trace and the reason."""

from __future__ import annotations

from mlcir.errors import MlcirError


class ScheduleError(MlcirError):
    """A primitive that cannot apply (illegal, or a decision that does not fit), or a schedule
    that the transform dialect cannot express."""


class PrimitiveError(ScheduleError):
    """Why a primitive cannot apply, raised by the state update of its family module, which
    does not know the trace; :class:`~mlcir.schedule.Schedule` re-raises it as a
    :class:`ScheduleError` that also names the instruction's position in the trace."""

    def __init__(self, primitive: str, reason: str):
        super().__init__(f"{primitive}: {reason}")
        self.primitive = primitive
        self.reason = reason
