"""A compiled module: its functions take and return numpy arrays.

Compiled functions have the signature the CPU pipeline leaves them: inputs, then one
out-parameter per result (``buffer-results-to-out-params``), all memrefs through the C
interface. :class:`Function` checks every argument against the signature recorded *before*
lowering (names, shapes, dtypes) and raises :class:`RuntimeInputError` before any native code
runs, allocates the results (uninitialised, 64-byte aligned) unless the caller passes them,
and returns them. The checks, descriptors and allocation of a call with the right arrays run in
C (:mod:`~mlcir.runtime.native_call`; docs/decisions.md, "Calling compiled functions").
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from mlcir.errors import RuntimeInputError
from mlcir.target import Target

from . import native_call
from .heap import keep_freed_blocks
from .library import CallbackErrors
from .memref import aligned_empty, descriptor
from .shapes import result_shapes, shape_function
from .signature import Signature, TensorArg


def _check(spec: TensorArg, value: Any, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise RuntimeInputError(f"{what} '{spec.name}': expected a numpy array "
                                f"{spec.describe()}, got {type(value).__name__}")
    if value.dtype != spec.dtype:
        raise RuntimeInputError(f"{what} '{spec.name}': expected dtype {spec.dtype.name}, got "
                                f"{value.dtype.name} (convert with .astype(np.{spec.dtype.name}))")
    if value.ndim != len(spec.shape) or any(
            want is not None and want != got for want, got in zip(spec.shape, value.shape)):
        raise RuntimeInputError(f"{what} '{spec.name}': expected shape {spec.describe()}, got "
                                f"{value.dtype.name}{list(value.shape)}")
    return value


class Function:
    """A callable compiled function: ``f(*inputs)`` (or ``f(name=array, ...)``) returns the
    result array(s); ``f(*inputs, out=array)`` (a tuple for several results) or
    ``f(*inputs, *outputs)`` writes into the caller's arrays (destination passing);
    ``f.run({name: array})`` returns ``{output name: array}``.

    Calls take the native path (:mod:`~mlcir.runtime.native_call`: checks, descriptors and
    result allocation in C, the GIL released while the compiled code runs) whenever the
    arrays are exactly right; anything else (a copy to make, an error to explain, a dynamic
    result shape) takes the checked Python path. Both may run from several threads at once.
    """

    def __init__(self, signature: Signature, raw: Callable[[Any], None],
                 errors: CallbackErrors, keep_alive: Any):
        self.signature = signature
        self._raw = raw
        self._errors = errors
        self._keep_alive = keep_alive
        # Argument shapes -> the static specialisation that runs them (set by the Executable).
        self.specializations: dict[tuple[tuple[int, ...], ...], Function] = {}
        # The native path calls a C function pointer (a JIT lookup, a shared library's
        # function); any other callable (the CUDA runtime's adapter) takes the Python path.
        self._native = native_call.extension()
        address = (ctypes.cast(raw, ctypes.c_void_p).value
                   if self._native and isinstance(raw, ctypes._CFuncPtr) else None)
        self._plan = native_call.plan(address, signature) if address else None
        self._input_names = tuple(a.name for a in signature.args)
        # Results whose shapes the fast path computes from the inputs' before the call.
        self._dynamic_results = any(d is None for r in signature.results for d in r.shape)
        self._result_shapes_of = shape_function(signature) if self._dynamic_results else None
        self._ranks = tuple(len(a.shape) for a in signature.args)

    def __repr__(self) -> str:
        return f"<mlcir.Function {self.signature.describe()}>"

    def _result_shapes(self, arrays: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
        """The shapes of the results for the (checked) input ``arrays``: the signature's,
        or, for a dynamic result, computed on the host from the input shapes
        (:func:`.shapes.result_shapes`)."""
        return result_shapes(self.signature, [a.shape for a in arrays])

    def _arrays(self, args: Sequence[Any]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        sig = self.signature
        n_args, n_res = len(sig.args), len(sig.results)
        if len(args) not in (n_args, n_args + n_res):
            expected = f"{n_args} arguments" + (f" (or {n_args + n_res} with outputs)" if n_res else "")
            names = ", ".join(a.name for a in sig.args)
            raise RuntimeInputError(f"{sig.name}() takes {expected}: {names}; got {len(args)}")
        arrays = []
        for spec, value in zip(sig.args, args[:n_args]):
            array = _check(spec, value, "argument")
            if spec.kind == "inout":
                if not (array.flags.c_contiguous and array.flags.writeable):
                    raise RuntimeInputError(f"argument '{spec.name}' is written by "
                                            f"{sig.name}(): it must be a writable C-contiguous array")
            else:
                array = np.ascontiguousarray(array)
            arrays.append(array)
        outputs = []
        if len(args) == n_args + n_res:
            for spec, value in zip(sig.results, args[n_args:]):
                array = _check(spec, value, "output")
                if not (array.flags.c_contiguous and array.flags.writeable):
                    raise RuntimeInputError(f"output '{spec.name}' must be a writable "
                                            "C-contiguous array")
                outputs.append(array)
        else:
            outputs = [aligned_empty(shape, spec.dtype)
                       for spec, shape in zip(sig.results, self._result_shapes(arrays))]
        return arrays, outputs

    def _positional(self, args: Sequence[Any], named: dict[str, Any], out: Any) -> list[Any]:
        """``args`` followed by the arguments given by name, in the signature's order, then
        the ``out=`` arrays."""
        sig = self.signature
        given = list(args)
        if named:
            order = [a.name for a in sig.args] + [r.name for r in sig.results]
            unknown = sorted(set(named) - set(order))
            if unknown:
                raise RuntimeInputError(f"{sig.name}() has no argument {', '.join(map(repr, unknown))} "
                                        f"(arguments: {', '.join(a.name for a in sig.args)})")
            for name in order[:len(given)]:
                if name in named:
                    raise RuntimeInputError(f"{sig.name}() got argument '{name}' twice")
            for name in order[len(given):]:
                if name not in named:
                    if len(given) < len(sig.args):
                        raise RuntimeInputError(f"{sig.name}() is missing argument '{name}'")
                    break
                given.append(named[name])
            if len(given) - len(args) != len(named):
                raise RuntimeInputError(f"{sig.name}(): outputs by name need every output given")
        if out is not None:
            outs = self._out_tuple(out)
            if len(given) != len(sig.args):
                raise RuntimeInputError(f"{sig.name}(): out= is given, so pass exactly the "
                                        f"{len(sig.args)} inputs before it")
            given += outs
        return given

    def dispatch(self, *args: Any) -> "Function":
        """The function that runs these (positional) arguments: the static specialisation
        tuned for their shapes, when there is one, else this function."""
        key = tuple(getattr(a, "shape", None) for a in args[:len(self.signature.args)])
        return self.specializations.get(key, self)

    def _out_tuple(self, out: Any) -> tuple[Any, ...]:
        """``out=`` as a tuple of one array per result."""
        sig = self.signature
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(outs) != len(sig.results):
            raise RuntimeInputError(f"{sig.name}() has {len(sig.results)} result(s): out= needs "
                                    f"{len(sig.results)} array(s), got {len(outs)}")
        return outs

    def prepare(self, *args: Any, out: Any = None,
                **named: Any) -> tuple[Callable[[], None], list[np.ndarray]]:
        """Check and pack the arguments once; return a no-argument call and the output arrays.

        Used by the time evaluator so that repeated calls measure only the compiled code. The
        call keeps this function (and so its executable and engine) alive. It reuses one set
        of descriptors: do not run the same prepared call from two threads at once.
        """
        if self.specializations:
            chosen = self.dispatch(*self._positional(args, named, out))
            if chosen is not self:
                return chosen.prepare(*args, out=out, **named)
        arrays, outputs = self._arrays(self._positional(args, named, out))
        all_arrays = arrays + outputs
        descs = [descriptor(a) for a in all_arrays]
        pointers = [ctypes.pointer(d) for d in descs]
        packed = (ctypes.c_void_p * len(pointers))()
        for i, p in enumerate(pointers):
            packed[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
        raw, errors = self._raw, self._errors
        keep = (self, all_arrays, descs, pointers, packed)

        def call() -> None:
            raw(packed)
            if errors.pending:
                errors.raise_pending()

        call._keep = keep  # type: ignore[attr-defined]
        return call, outputs

    def _checked_call(self, args: Sequence[Any], named: dict[str, Any], out: Any) -> Any:
        """The Python path: every check with its clear error, copies of non-contiguous inputs,
        results of dynamic shape."""
        call, outputs = self.prepare(*args, out=out, **named)
        call()
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __call__(self, *args: Any, out: Any = None, **named: Any) -> Any:
        if named and not args and len(named) == len(self._input_names) and all(
                name in named for name in self._input_names):  # ex.main(**inputs): the fast path
            args, named = tuple(named[name] for name in self._input_names), {}
        if self.specializations and not named:
            chosen = self.dispatch(*args)
            if chosen is not self:
                return chosen(*args, out=out)
        if self._plan is not None and not named:
            inputs, outs = args, None
            if out is not None:
                outs = out if type(out) is tuple else self._out_tuple(out)
            elif len(args) > len(self.signature.args):
                inputs, outs = args[:len(self.signature.args)], args[len(self.signature.args):]
            elif self._dynamic_results:
                outs = self._sized_outputs(inputs)
            result = self._native.call(self._plan, inputs, outs)
            if result is not NotImplemented:
                if self._errors.pending:
                    self._errors.raise_pending()
                return result
        return self._checked_call(args, named, out)

    def _sized_outputs(self, inputs: Sequence[Any]) -> tuple[tuple[int, ...], ...] | None:
        """The result shapes for ``inputs`` of a function with dynamic results, computed from
        the inputs' shapes (the native call allocates results of those shapes); None (the
        checked path then explains) when the inputs are not arrays of the signature's ranks
        or their shapes do not bind."""
        if len(inputs) != len(self._ranks):
            return None
        shapes = []
        for array, rank in zip(inputs, self._ranks):
            if type(array) is not np.ndarray or array.ndim != rank:
                return None
            shapes.append(array.shape)
        return self._result_shapes_of(shapes)

    def run(self, inputs: "dict[str, Any]") -> dict[str, np.ndarray]:
        """Inputs and outputs by name: ``{input name: array}`` in, ``{output name: array}``
        out (the names of the model, e.g. an ONNX model's input and output names)."""
        names = [a.name for a in self.signature.args]
        if len(inputs) == len(names) and all(name in inputs for name in names):
            result = self(*[inputs[name] for name in names])
            outputs = result if isinstance(result, tuple) else [result]
        else:  # outputs by name, or an error to explain
            call, outputs = self.prepare(**inputs)
            call()
        return {spec.name: array for spec, array in zip(self.signature.results, outputs)}


@dataclass
class Executable:
    """The result of :func:`mlcir.build` or :func:`mlcir.load`: compiled functions by name.

    ``engine`` is the MLIR ExecutionEngine (built here) or a loaded
    :class:`~mlcir.runtime.aot.SharedObject` / :class:`~mlcir.targets.cuda.CudaSharedObject`
    (a saved model); all look functions up by name with the same packed calling convention.
    ``libraries`` maps each library symbol the code calls to ``(registered name, [(rank,
    dtype)] of its memref arguments)``: what :meth:`save` records so that :func:`mlcir.load`
    can bind them again.
    """

    signatures: dict[str, Signature]
    engine: Any
    target: Target
    errors: CallbackErrors = field(default_factory=CallbackErrors)
    keep_alive: list[Any] = field(default_factory=list)
    libraries: dict[str, tuple[str, list[tuple[int, np.dtype]]]] = field(default_factory=dict)
    # The LLVM-dialect module the engine compiled (built here; None for a loaded model).
    lowered: Any = None
    # A loaded model's shared library and metadata.json as they were read, so that it saves
    # again unchanged (the CPU features its code needs, a cuda model's kernels).
    shared_library: bytes | None = None
    saved_metadata: dict[str, Any] | None = None
    # A profiling build's call sites per public function (mlcir-profile-hooks), else None.
    profile_sites: dict[str, list[dict[str, Any]]] | None = None
    # Builds the profiling twin of this executable on the first profile() (set by the driver)
    # and gives the peak GFLOPS the profile's % of peak divides by.
    profile_builder: Callable[[], "Executable"] | None = None
    peak_gflops: Callable[[], float] | None = None
    # The external C functions (UMA backends) the code calls: saved into the model's library.
    externs: Any = None
    # A build with a UMA backend: what its partition offloaded and refused (why).
    partition_report: Any = None
    _functions: dict[str, Function] = field(default_factory=dict)

    def __post_init__(self) -> None:
        keep_freed_blocks()

    def __getitem__(self, name: str) -> Function:
        if name not in self._functions:
            if name not in self.signatures:
                known = ", ".join(sorted(self.signatures)) or "none"
                raise KeyError(f"no function '{name}' in this executable (functions: {known})")
            raw = self.engine.lookup(name)
            function = Function(self.signatures[name], raw, self.errors, self)
            self._functions[name] = function
            function.specializations = {shapes: self[specialized] for shapes, specialized
                                        in self.signatures[name].specializations}
        return self._functions[name]

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_") or name not in self.signatures:
            raise AttributeError(name)
        # Kept as an instance attribute: ``ex.main`` is then a plain lookup on every call.
        function = self.__dict__[name] = self[name]
        return function

    @property
    def function_names(self) -> list[str]:
        return list(self.signatures)

    def time_evaluator(self, name: str, **options: Any):
        """TVM's ``time_evaluator``: see :func:`mlcir.runtime.evaluator.time_evaluator`."""
        from .evaluator import time_evaluator

        return time_evaluator(self[name], **options)

    def profile(self, *args: Any, function: str = "main", repeat: int = 10, out: Any = None,
                **named: Any):
        """Time every kernel and library call of ``function`` on these inputs (medians of at
        least ``repeat`` calls): a :class:`~mlcir.runtime.profiler.Profile` (print it, or write
        ``.write_chrome_trace(path)``). A normal build compiles its profiling twin on the first
        call (the same schedules, with timing hooks); its own calls stay hook-free."""
        from .profiler import profile_calls

        target = self
        if self.profile_sites is None:
            if self.profile_builder is None:
                raise ValueError("this executable cannot be profiled: load a model compiled "
                                 "with `mlcir compile --profile`, or build it with mlcir.build")
            if "_profiled" not in self.__dict__:
                self.__dict__["_profiled"] = self.profile_builder()
            target = self.__dict__["_profiled"]
        if function not in (target.profile_sites or {}):
            raise KeyError(f"no profiled function '{function}' (functions: "
                           f"{', '.join(sorted(target.profile_sites or {}))})")
        call, _ = target[function].prepare(*args, out=out, **named)
        peak = self.peak_gflops() if self.peak_gflops else 0.0
        return profile_calls(call, function, target.engine, target.profile_sites[function],
                             repeat, peak)

    def set_num_threads(self, threads: int) -> None:
        """Threads used by parallel loops from now on (the OpenMP runtime's setting)."""
        from .threads import set_num_threads

        set_num_threads(threads)

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Write this compiled model to one file that :func:`mlcir.load` runs without
        recompiling (format: docs/cli.md, "Saved models")."""
        from .saving import save

        save(self, path)
