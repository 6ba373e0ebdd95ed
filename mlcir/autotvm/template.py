"""Templates and tuning tasks: ``@autotvm.template(name)``, ``Task`` and ``create``.

A template is a function of plain arguments (sizes, dtypes) that builds a kernel with
``mlcir.te``, schedules it with ``mlcir.Schedule`` as its config says (:func:`get_config`) and
returns ``(sch, tensors)``. :func:`create` runs it once with a config space in collect mode to
learn its knobs; the result is a :class:`Task`: the template, its arguments, the target, the
config space, the FLOPs, and the kernel (the schedule's unscheduled module, the workload that
records name by its hash). :meth:`Task.instantiate` runs it with one config.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from mlir import ir

from mlcir.errors import MlcirError
from mlcir.schedule import Schedule
from mlcir.target import Target
from mlcir.targets.kernels import flops, workload_hash

from .dispatcher import ApplyConfig, DispatchContext, Workload, pop_config, push_config
from .space import ConfigEntity, ConfigSpace

# Template name -> the function as written (the registered wrapper calls it with a config).
TASK_TABLE: dict[str, Callable[..., Any]] = {}


class TemplateError(MlcirError, ValueError):
    """An unknown template name, or a template that does not return ``(sch, tensors)``."""


def _canonical_args(args: Any) -> tuple[Any, ...]:
    """Arguments as a hashable tuple (lists, as JSON gives them back, become tuples)."""
    return tuple(_canonical_args(a) if isinstance(a, (list, tuple)) else a for a in args)


def template(task_name: str, func: Callable[..., Any] | None = None) -> Any:
    """Register ``func`` as the template ``task_name`` (a decorator). Calling the decorated
    function runs the template with the config the current dispatch context gives for
    ``(task_name, args)``: the best record inside ``apply_history_best``, the first choice
    of each knob (with a warning) outside any."""

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            workload = (task_name, _canonical_args(args))
            config = DispatchContext.current().query(None, workload)
            push_config(config)
            try:
                return f(*args, **kwargs)
            finally:
                pop_config()

        wrapper.task_name = task_name  # type: ignore[attr-defined]
        TASK_TABLE[task_name] = wrapper
        return wrapper

    return register(func) if func is not None else register


def _check_result(name: str, result: Any) -> tuple[Schedule, list[Any]]:
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Schedule)):
        raise TemplateError(f"template {name!r} must return (sch, tensors) with sch an "
                            f"mlcir.Schedule, got {type(result).__name__}")
    return result[0], list(result[1])


@dataclass
class Task:
    """A template with fixed arguments on a target: what a tuner searches.

    ``func(*args)`` runs the template (with the config of the current dispatch context);
    ``config_space`` is its knobs; ``kernel`` the unscheduled kernel of the first config."""

    name: str
    args: tuple[Any, ...]
    target: Target
    func: Callable[..., Any]
    config_space: ConfigSpace = field(default_factory=ConfigSpace)
    flop: float = 0.0
    kernel: ir.Module | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    weight: int = 1  # calls per model run (a task of extract_from_program)
    label: str = ""  # the kernel's name in the model (a task of extract_from_program)
    default_index: int | None = None  # a config every tuner measures first (the default schedule)

    @property
    def workload(self) -> Workload:
        """``(name, args)``: how records and dispatch contexts name this task."""
        return (self.name, self.args)

    @property
    def workload_hash(self) -> str:
        assert self.kernel is not None
        return workload_hash(self.kernel)

    def instantiate(self, config: ConfigSpace) -> tuple[Schedule, list[Any]]:
        """The template's ``(sch, tensors)`` for ``config``."""
        with ApplyConfig(config):
            return _check_result(self.name, self.func(*self.args, **self.kwargs))

    def __repr__(self) -> str:
        return (f"Task(func_name={self.name}, args={self.args}, kwargs={self.kwargs}, "
                f"workload={self.workload})")


def create(task_name: str, args: tuple[Any, ...] | list[Any], target: str | Target = "llvm",
           **kwargs: Any) -> Task:
    """The task of template ``task_name`` on ``args`` for ``target``: runs the template once
    to collect its config space."""
    if task_name not in TASK_TABLE:
        known = ", ".join(sorted(TASK_TABLE)) or "none registered"
        raise TemplateError(f"no autotvm template named {task_name!r} (templates: {known}); "
                            "register one with @autotvm.template(name)")
    task = Task(task_name, _canonical_args(args), Target.parse(target), TASK_TABLE[task_name],
                kwargs=dict(kwargs))
    space = ConfigSpace()
    sch, _ = task.instantiate(space)
    task.config_space = space
    task.kernel = sch.original
    task.flop = space.flop or flops(sch.original)
    return task


def get_config_entity(task: Task, index: int) -> ConfigEntity:
    """The config of index ``index`` of ``task``'s space."""
    return task.config_space.get(index)
