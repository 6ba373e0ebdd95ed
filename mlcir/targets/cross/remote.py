"""Running a saved model on the machine it was built for, from here: TVM's "remote device" in
miniature.

The model's library runs in the reference C runner (``mlcir/c_runner/run_model.c``), built
for the target's architecture by ``zig cc``, on ``.npy`` files; a :class:`DeviceRunner`
moves the files and runs the runner somewhere. :class:`QemuRunner` runs it here under QEMU
user-mode emulation (``qemu-aarch64``, with the target's C library from ``libc6-arm64-cross``);
a runner for a real aarch64 node (a Ray task) implements the same protocol: ship the runner,
the library and the inputs, run the same command line there, bring the outputs back.
Emulation says nothing about speed: :attr:`DeviceRunner.emulated` tells callers never to
report its timings.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from mlcir.errors import BuildError, LoadError
from mlcir.runtime.c_interface import c_runner_source, include_dir
from mlcir.runtime.model_file import model_signatures, model_target, read_library
from mlcir.runtime.signature import Signature
from mlcir.target import Target

from .toolchain import zig_cc

# The Debian packages of QEMU user-mode emulation and of aarch64's C library (the emulated
# runner's dynamic loader, libc, libm and libdl).
QEMU_PACKAGE = "qemu-user"
SYSROOT_PACKAGE = "libc6-arm64-cross"
SYSROOTS = {"aarch64": "/usr/aarch64-linux-gnu"}


class DeviceRunner(Protocol):
    """Runs ``run_model`` on a machine of one architecture (see the module docstring)."""

    arch: str
    # True when the machine is emulated: its timings mean nothing.
    emulated: bool

    def describe(self) -> str:
        """One line for the user: where the model runs."""

    def run(self, library: Path, function: str, inputs: Sequence[Path],
            outputs: Sequence[Path]) -> None:
        """Run ``function`` of ``library`` on the ``.npy`` files ``inputs``, writing
        ``outputs``; :class:`~mlcir.errors.BuildError` with the runner's message on failure."""


def c_runner(target: Target) -> Path:
    """``run_model`` built for ``target``'s architecture (cached by the source's hash)."""
    source = c_runner_source()
    header = include_dir() / "mlcir.h"
    digest = hashlib.sha256(source.read_bytes() + header.read_bytes()).hexdigest()[:16]
    arch = target.triple.split("-")[0]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mlcir"
    runner = cache / f"run_model-{arch}-{digest}"
    if not runner.exists():
        cache.mkdir(parents=True, exist_ok=True)
        partial = runner.with_name(f".{runner.name}.{os.getpid()}.partial")
        try:
            zig_cc(target, [source], partial, "-ldl")
            os.replace(partial, runner)
        finally:
            partial.unlink(missing_ok=True)
    return runner


@dataclass
class QemuRunner:
    """``run_model`` under QEMU user-mode emulation on this machine."""

    arch: str
    emulated: bool = True

    def _command(self) -> list[str]:
        qemu = shutil.which(f"qemu-{self.arch}")
        if qemu is None:
            raise BuildError(f"running a {self.arch} model here needs QEMU user-mode emulation: "
                             f"qemu-{self.arch} is not installed (Debian/Ubuntu: apt-get "
                             f"install {QEMU_PACKAGE} {SYSROOT_PACKAGE})")
        sysroot = os.environ.get("QEMU_LD_PREFIX") or SYSROOTS.get(self.arch, "")
        if not Path(sysroot, "lib").is_dir():
            raise BuildError(f"running a {self.arch} model under qemu-{self.arch} needs the "
                             f"{self.arch} C library, not found in {sysroot or '(none)'} "
                             f"(Debian/Ubuntu: apt-get install {SYSROOT_PACKAGE}; or set "
                             "QEMU_LD_PREFIX to a sysroot)")
        # -cpu max: every extension QEMU emulates (SVE included) is there.
        return [qemu, "-cpu", "max", "-L", sysroot]

    def describe(self) -> str:
        return f"under emulation with qemu-{self.arch}"

    def run(self, library: Path, function: str, inputs: Sequence[Path],
            outputs: Sequence[Path]) -> None:
        command = self._command()
        runner = c_runner(Target.parse(f"llvm -mtriple={self.arch}-linux-gnu"))
        args = [str(runner), str(library), function, *map(str, inputs)]
        for output in outputs:
            args += ["-o", str(output)]
        result = subprocess.run(command + args, capture_output=True, text=True)
        if result.returncode != 0:
            message = result.stderr.strip().removeprefix("run_model: error: ")
            raise BuildError(f"run_model ({self.describe()}) failed: {message[:2000]}")


def runner_for(target: Target) -> DeviceRunner:
    """The runner of a model built for ``target`` on another machine: emulation here."""
    arch = target.triple.split("-")[0]
    if arch not in SYSROOTS:
        raise BuildError(f"no way to run {target.triple} code here (emulated: "
                         f"{', '.join(SYSROOTS)})")
    return QemuRunner(arch)


@dataclass
class ForeignModel:
    """A saved model for another machine: what is needed to run it through a runner."""

    path: Path
    target: Target
    signatures: dict[str, Signature]
    library: bytes
    metadata: dict[str, Any]


def foreign_model(path: "str | os.PathLike[str]") -> ForeignModel | None:
    """The saved model ``path`` if it is built for a machine other than this one (checked as
    :func:`mlcir.load` checks it, but for its own machine), else None."""
    path = Path(path)
    meta, library = read_library(path, here=False)
    target = model_target(path, meta)
    if target.kind != "llvm" or target.runs_here:
        return None
    if meta.get("library_functions"):
        names = ", ".join(d.get("name", "?") for d in meta["library_functions"])
        raise LoadError(f"{path}: the model calls library function(s) registered in Python "
                        f"({names}), which the C runner cannot call; run it from Python on "
                        f"a {target.triple} machine")
    return ForeignModel(path, target, model_signatures(path, meta), library, meta)


def run_foreign(model: ForeignModel, function: str, inputs: Sequence[np.ndarray],
                runner: DeviceRunner | None = None) -> dict[str, np.ndarray]:
    """Run ``function`` of ``model`` on ``inputs`` (its arguments in order) through ``runner``
    (default :func:`runner_for` the model's target); returns the outputs by name: the results,
    then the arguments it writes."""
    runner = runner or runner_for(model.target)
    sig = model.signatures[function]
    for spec in sig.results:
        if any(d is None for d in spec.shape):
            raise BuildError(f"result '{spec.name}' of {function}() has a dynamic shape "
                             f"{spec.describe()}: run_model needs --shape {spec.name}=... "
                             "(run it directly)")
    names = [r.name for r in sig.results] + [a.name for a in sig.args if a.kind == "inout"]
    with tempfile.TemporaryDirectory(prefix="mlcir-remote-") as tmp:
        folder = Path(tmp)
        library = folder / "model.so"
        library.write_bytes(model.library)
        input_files = []
        for i, (spec, array) in enumerate(zip(sig.args, inputs)):
            file = folder / f"input{i}.npy"
            np.save(file, np.ascontiguousarray(array, dtype=spec.dtype))
            input_files.append(file)
        output_files = [folder / f"output{i}.npy" for i in range(len(names))]
        runner.run(library, function, input_files, output_files)
        return {name: np.load(file) for name, file in zip(names, output_files)}
