"""Timing a scheduled kernel in this process — the helpers of the course chapter.

``evaluate(sch)`` compiles ``sch.mod`` and returns its median time on random inputs;
``random_search(mod, schedule_fn, num_trials)`` runs a stochastic schedule function on fresh
schedules, times each candidate, prints its time and trace, and returns the best schedule.
Everything runs in this process, so a candidate that crashes LLVM ends it; ``tune_kernel``
builds and runs candidates in worker processes, which contain that (:mod:`.builder`,
:mod:`.runner`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import numpy as np
from mlir import ir

from mlcir.runtime import aligned_array
from mlcir.targets import compile_module
from mlcir.schedule import Schedule, ScheduleError

from .kernel_sizes import attached


def random_inputs(executable: Any, function: str = "main", seed: int = 0,
                  shapes: Sequence[Sequence[int]] | None = None) -> list[np.ndarray]:
    """Random arrays for every argument of a compiled function (64-byte aligned); a dynamic
    dim is 1 unless ``shapes`` gives each argument's shape."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i, arg in enumerate(executable[function].signature.args):
        shape = tuple(shapes[i]) if shapes is not None else \
            tuple(1 if d is None else d for d in arg.shape)
        if np.issubdtype(arg.dtype, np.floating):
            data = rng.standard_normal(shape).astype(arg.dtype)
        else:
            # no zeros: an integer division or modulo by zero in the reference run, made in
            # the tuner's own process, is a SIGFPE (fuzz seed 7 case 1752: Mod of int32)
            data = rng.integers(1, 8, shape).astype(arg.dtype)
        arrays.append(aligned_array(data))
    return arrays


def reference_arrays(executable: Any, kernel: ir.Module) -> dict[str, np.ndarray]:
    """A workload's reference data: random inputs and the outputs of ``executable`` (its
    kernel compiled without a schedule) on them, as ``input<i>``/``output<i>``; a dynamic
    kernel with sizes to be measured at (:mod:`.kernel_sizes`) has a set per size,
    ``size<j>.input<i>``, and their ``weights``."""
    sizes = attached(kernel)
    runs = [("", None)] if sizes is None else [(f"size{j}.", s) for j, s in enumerate(sizes[0])]
    arrays: dict[str, np.ndarray] = {}
    for prefix, shapes in runs:
        inputs = random_inputs(executable, shapes=shapes)
        outputs = executable.main(*[a.copy() for a in inputs])
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        arrays.update({f"{prefix}input{i}": a for i, a in enumerate(inputs)})
        arrays.update({f"{prefix}output{i}": np.asarray(o) for i, o in enumerate(outputs)})
    if sizes is not None:
        arrays["weights"] = np.asarray(sizes[1], dtype=np.float64)
    return arrays


def evaluate(kernel: Schedule | ir.Module, *, target: str = "llvm", number: int = 5,
             repeat: int = 5, function: str = "main", inputs: list[np.ndarray] | None = None
             ) -> float:
    """Median seconds per call of the (scheduled) kernel."""
    mod = kernel.mod if isinstance(kernel, Schedule) else kernel
    ex = compile_module(mod, target=target)
    args = inputs if inputs is not None else random_inputs(ex, function)
    return ex.time_evaluator(function, number=number, repeat=repeat, warmup=1)(*args).median


def random_search(mod: Any, schedule_fn: Callable[[Schedule], None], num_trials: int = 5, *,
                  seed: int = 0, target: str = "llvm", verbose: bool = True) -> Schedule | None:
    """The course's random search: ``num_trials`` fresh schedules of ``mod``, each shaped by the
    stochastic ``schedule_fn`` with its own seed; returns the fastest (None if all failed)."""
    best, best_time = None, float("inf")
    for trial in range(num_trials):
        sch = Schedule(mod, seed=seed + trial)
        try:
            schedule_fn(sch)
            seconds = evaluate(sch, target=target)
        except ScheduleError as error:
            if verbose:
                print(f"=====Attempt {trial}: rejected: {error}")
            continue
        if verbose:
            print(f"=====Attempt {trial}, time-cost: {seconds * 1e3:.3f} ms====")
            print(sch.trace)
        if seconds < best_time:
            best, best_time = sch, seconds
    return best
