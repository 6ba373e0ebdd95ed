"""Task schedulers: which task of a model gets the next round of trials.

:class:`TaskScheduler` is the role's interface; ``GradientScheduler`` (shorthand
``"gradient"``) and ``RoundRobinScheduler`` (``"round-robin"``) implement it.
"""

from __future__ import annotations

import math
from typing import Protocol, Sequence, TypeVar

from mlcir.errors import TuningError
from .tasks import Task


class TaskState(Protocol):
    """What a scheduler reads of a task being tuned."""

    task: Task
    history: list[float]  # best latency after each round

    @property
    def done(self) -> bool: ...


T = TypeVar("T", bound=TaskState)


class TaskScheduler(Protocol):
    def pick(self, tuners: Sequence[T]) -> T | None:
        """The task to tune next (None: every task is done)."""


class GradientScheduler:
    """Chooses the next task by the expected drop of its weighted latency (the gradient task
    scheduler of Ansor/TVM, without its similar-task term):
    ``weight * (alpha * backward + (1 - alpha) * forward)``, where ``backward`` is the average
    drop per round over the last ``window`` rounds and ``forward`` is the optimistic guess that
    the task's remaining latency falls at the rate of its rounds so far (latency / rounds). A
    task that has stopped improving loses out to one that had few rounds. Every task first gets
    one round."""

    def __init__(self, alpha: float = 0.2, window: int = 3):
        self.alpha = alpha
        self.window = window

    def gain(self, t: TaskState) -> float:
        h = [x for x in t.history if math.isfinite(x)]
        if not h:  # every candidate failed so far: the others first
            return 0.0
        back = h[-1 - self.window] if len(h) > self.window else h[0]
        backward = (back - h[-1]) / max(min(self.window, len(h) - 1), 1)
        forward = h[-1] / len(t.history)
        return t.task.weight * (self.alpha * backward + (1 - self.alpha) * forward)

    def pick(self, tuners: Sequence[T]) -> T | None:
        live = [t for t in tuners if not t.done]
        if not live:
            return None
        for t in live:
            if not t.history:
                return t
        return max(live, key=self.gain)


class RoundRobinScheduler:
    """Every task in turn."""

    def __init__(self) -> None:
        self.next = 0

    def pick(self, tuners: Sequence[T]) -> T | None:
        for _ in range(len(tuners)):
            t = tuners[self.next % len(tuners)]
            self.next += 1
            if not t.done:
                return t
        return None


def make_task_scheduler(scheduler: str | TaskScheduler) -> TaskScheduler:
    """The scheduler named by a shorthand (``"gradient"``, ``"round-robin"``), or
    ``scheduler``."""
    if not isinstance(scheduler, str):
        return scheduler
    if scheduler == "gradient":
        return GradientScheduler()
    if scheduler == "round-robin":
        return RoundRobinScheduler()
    raise TuningError(f"unknown task scheduler {scheduler!r} (gradient, round-robin)")
