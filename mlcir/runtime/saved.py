"""Saved models: one file holding a compiled model's shared library and what it takes to call it.

``Executable.save(path)`` and ``mlcir.compile(mod, target, path)`` write a zip archive with two
members:

- ``metadata.json``: the format name and version, the mlcir and MLIR versions that wrote it,
  the platform, the target, each public function's signature (argument and result names,
  shapes, dtypes, which arguments it writes) and the library functions its code calls (symbol,
  registered name, rank and dtype of each memref argument); for a ``cuda`` model, a ``cuda``
  section (chip, binary format, the kernel modules embedded in the library);
- ``model.so``: for ``llvm``, the code the JIT compiled, linked into a shared library with the
  shim that binds library functions (:mod:`mlcir.runtime.aot`); for ``cuda``, the host code
  compiled by ``llc`` with the kernels' PTX/cubin embedded and loaded by its constructors,
  linked with the MLIR CUDA runtime (:func:`mlcir.runtime.cuda.compile_cuda_shared_object`).

A ``cuda`` model is compiled without a driver or a GPU (:func:`compile_prepared_to_file`, no
JIT); loading it needs both.

:func:`load` checks the file before running anything from it and answers every problem with a
:class:`~mlcir.errors.LoadError` naming the file and the problem (a ``cuda`` model on a machine
without the NVIDIA driver: :class:`~mlcir.errors.CudaDriverError`). No MLIR, no source model and
no compilation are involved in loading; library functions must be registered in the loading
process (``mlcir.register_func``) before :func:`load`. docs/cli.md documents the format.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import platform
import re
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mlcir.errors import BuildError, CudaDriverError, LoadError
from mlcir.target import Target

from .aot import SharedObject, link_shared_object
from .executable import Executable, Signature
from .library import CallbackErrors, get_func, make_callback, registered_names

FORMAT = "mlcir-model"
FORMAT_VERSION = 1
METADATA = "metadata.json"
LIBRARY = "model.so"


def _mlcir_version() -> str:
    import mlcir  # the package's version, read when needed (the package imports this module)

    return mlcir.__version__


def _mlir_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("xtc-mlir-python-bindings")
    except Exception:  # noqa: BLE001 - informative only
        return None


def _platform() -> dict[str, str]:
    return {"system": platform.system(), "machine": platform.machine()}


# The instruction-set extensions LLVM may use when it compiles for the host CPU (the
# ExecutionEngine always targets the host, with all its features): a model saved on a machine
# with AVX-512 would crash on one without it, so the loader checks them first.
_VECTOR_ISA = re.compile(r"^(sse\d\w*|ssse3|avx\w*|fma\w*|f16c|bmi\d|amx\w*|neon|asimd\w*|sve\w*)$")


def _cpu_features() -> list[str]:
    """The vector ISA extensions of this CPU, from /proc/cpuinfo (empty where it is absent)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return sorted({flag for flag in value.split() if _VECTOR_ISA.match(flag)})
    except OSError:
        pass
    return []


def metadata(signatures: dict[str, Signature], libraries: dict[str, tuple[str, list]],
             target: Any, library: bytes, *, cpu_features: list[str],
             cuda: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``metadata.json`` of a model whose shared library is ``library``."""
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "mlcir_version": _mlcir_version(),
        "mlir_version": _mlir_version(),
        "platform": _platform(),
        "cpu_features": list(cpu_features),
        "target": str(target),
        "functions": [sig.to_json() for sig in signatures.values()],
        "library_functions": [
            {"symbol": symbol, "name": name,
             "args": [{"rank": int(rank), "dtype": np.dtype(dtype).name} for rank, dtype in specs]}
            for symbol, (name, specs) in libraries.items()],
        "shared_library": {"file": LIBRARY, "sha256": hashlib.sha256(library).hexdigest(),
                           "bytes": len(library)},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if cuda is not None:
        meta["cuda"] = cuda
    return meta


def _compiled(executable: Executable) -> tuple[bytes, list[str], dict[str, Any] | None]:
    """The shared library of ``executable``, the CPU features its code needs and its ``cuda``
    metadata (None for llvm)."""
    if executable.shared_library is not None:  # a loaded model saved again, unchanged
        saved = executable.saved_metadata or {}
        return (executable.shared_library, saved.get("cpu_features", _cpu_features()),
                saved.get("cuda"))
    target = Target.parse(executable.target)
    if target.kind == "cuda":  # built by the JIT on a GPU machine: compile its lowered module
        if executable.lowered is None:
            raise BuildError("this cuda executable holds no lowered module to save; compile "
                             "the model with mlcir.compile(model, target, path)")
        from .cuda import cuda_library

        library, cuda = cuda_library(executable.lowered, target)
        return library, [], cuda  # llc compiles the host code for the generic CPU
    if target.kind != "llvm":
        raise BuildError(f"saving a model compiled for '{target.kind}' is not supported "
                         "(only 'llvm' and 'cuda' models can be saved)")
    symbols = [(symbol, len(specs)) for symbol, (_, specs) in executable.libraries.items()]
    with tempfile.TemporaryDirectory(prefix="mlcir-save-") as tmp:
        path = link_shared_object(executable.engine, Path(tmp) / LIBRARY,
                                  library_symbols=symbols,
                                  function=next(iter(executable.signatures)))
        return path.read_bytes(), _cpu_features(), None


def save(executable: Executable, path: "str | os.PathLike[str]") -> Path:
    """Write ``executable`` to ``path`` (replaced as a whole: a reader never sees half a file)."""
    path = Path(path)
    library, cpu_features, cuda = _compiled(executable)
    write_model(path, metadata(executable.signatures, executable.libraries, executable.target,
                               library, cpu_features=cpu_features, cuda=cuda), library)
    return path


def write_model(path: Path, meta: dict[str, Any], library: bytes) -> None:
    """The archive of ``meta`` and ``library``, written atomically to ``path``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(METADATA, json.dumps(meta, indent=2) + "\n")
        archive.writestr(LIBRARY, library)
    write_atomically(path, buffer.getvalue())


@dataclass
class SavedModel:
    """What :func:`mlcir.compile` wrote: the file, its ``metadata.json``, the functions'
    signatures and the LLVM-dialect module that was compiled (host code plus ``gpu.binary``
    kernels for cuda)."""

    path: Path
    metadata: dict[str, Any]
    signatures: dict[str, Signature]
    lowered: Any = None

    def __repr__(self) -> str:
        return f"<mlcir.SavedModel {self.path} for '{self.target}': {self.describe()}>"

    @property
    def target(self) -> str:
        return self.metadata["target"]

    def describe(self) -> str:
        """The functions: ``main(x: float32[1, 784]) -> (float32[1, 10])``, comma-separated."""
        return ", ".join(sig.describe() for sig in self.signatures.values())

    def load(self) -> Executable:
        """:func:`load` the file (a cuda model needs the NVIDIA driver and a GPU)."""
        return load(self.path)


def compile_prepared_to_file(work: Any, sigs: dict[str, Signature], libs: dict[str, Any],
                             target: Target, path: "str | os.PathLike[str]",
                             pipeline: str | None = None, keep: Any = None) -> SavedModel:
    """Lower ``work`` (in place) for ``target`` and write the saved model ``path``.

    ``cuda``: the ``mlcir-cuda`` pipeline, then ``llc`` and ``cc`` — no JIT and no driver, so
    this runs on a machine without a GPU. ``llvm``: the JIT's code, exactly as
    :func:`mlcir.build` followed by :meth:`Executable.save`."""
    path = Path(path)
    if target.kind == "cuda":
        from .cuda import compile_prepared_cuda_library

        library, cuda = compile_prepared_cuda_library(work, libs, target, pipeline)
        meta = metadata(sigs, libs, target, library, cpu_features=[], cuda=cuda)
        write_model(path, meta, library)
        return SavedModel(path, meta, sigs, work)
    from .compile import compile_prepared

    executable = compile_prepared(work, sigs, libs, target, pipeline, keep)
    library, cpu_features, _ = _compiled(executable)
    meta = metadata(sigs, libs, target, library, cpu_features=cpu_features)
    write_model(path, meta, library)
    return SavedModel(path, meta, sigs, executable.lowered)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``. A
    device or a pipe (``/dev/null``, ``/dev/stdout``) is written to directly: renaming over it
    would replace the device node."""
    if path.exists() and not path.is_file() and not path.is_dir():
        with open(path, "wb") as f:
            f.write(data)
        return
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


# -- loading ---------------------------------------------------------------------------------

def _open(path: Path) -> zipfile.ZipFile:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as error:
        raise LoadError(f"{path}: cannot read the file ({error.strerror or error})") from None
    if head != b"PK\x03\x04":
        raise LoadError(f"{path}: not an mlcir model (a saved model is a zip archive written "
                        "by Executable.save or `mlcir compile`)")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise LoadError(f"{path}: the file is truncated or corrupt ({error})") from None


def _read(path: Path, archive: zipfile.ZipFile, member: str) -> bytes:
    try:
        return archive.read(member)
    except KeyError:
        raise LoadError(f"{path}: not an mlcir model (the archive has no {member})") from None
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as error:
        raise LoadError(f"{path}: {member} is truncated or corrupt ({error})") from None


def read_metadata(path: "str | os.PathLike[str]") -> dict[str, Any]:
    """The checked ``metadata.json`` of the saved model ``path`` (no code is loaded)."""
    path = Path(path)
    with _open(path) as archive:
        return _metadata(path, archive)


def _metadata(path: Path, archive: zipfile.ZipFile) -> dict[str, Any]:
    try:
        meta = json.loads(_read(path, archive, METADATA).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LoadError(f"{path}: {METADATA} is corrupt ({error})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise LoadError(f"{path}: not an mlcir model ({METADATA} does not say "
                        f"\"format\": \"{FORMAT}\")")
    if meta.get("format_version") != FORMAT_VERSION:
        raise LoadError(f"{path}: saved-model format version {meta.get('format_version')!r}; "
                        f"this mlcir reads version {FORMAT_VERSION} (recompile the model)")
    version = _mlcir_version()
    if meta.get("mlcir_version") != version:
        raise LoadError(f"{path}: saved by mlcir {meta.get('mlcir_version')}, this is mlcir "
                        f"{version}; compiled code is tied to the version that built it "
                        "(recompile the model)")
    here = _platform()
    if meta.get("platform") != here:
        saved = meta.get("platform") or {}
        raise LoadError(f"{path}: compiled for {saved.get('machine')} ({saved.get('system')}), "
                        f"this machine is {here['machine']} ({here['system']})")
    missing = sorted(set(meta.get("cpu_features") or []) - set(_cpu_features()))
    if missing and _cpu_features():
        raise LoadError(f"{path}: compiled for a CPU with {', '.join(missing)}, which this CPU "
                        "lacks (recompile the model on this machine)")
    try:
        Target.parse(meta.get("target", ""))
    except (ValueError, AttributeError):
        raise LoadError(f"{path}: {METADATA} is corrupt (target {meta.get('target')!r})") from None
    for key, kind in (("target", str), ("functions", list), ("library_functions", list),
                      ("shared_library", dict)):
        if not isinstance(meta.get(key), kind):
            raise LoadError(f"{path}: {METADATA} is corrupt (no valid '{key}')")
    return meta


def _signatures(path: Path, meta: dict[str, Any]) -> dict[str, Signature]:
    try:
        sigs = [Signature.from_json(d) for d in meta["functions"]]
    except (KeyError, TypeError, ValueError) as error:
        raise LoadError(f"{path}: {METADATA} is corrupt (a function signature: "
                        f"{type(error).__name__} {error})") from None
    return {sig.name: sig for sig in sigs}


def _libraries(path: Path, meta: dict[str, Any]) -> dict[str, tuple[str, list]]:
    try:
        libs = {d["symbol"]: (d["name"], [(int(a["rank"]), np.dtype(a["dtype"])) for a in d["args"]])
                for d in meta["library_functions"]}
    except (KeyError, TypeError, ValueError) as error:
        raise LoadError(f"{path}: {METADATA} is corrupt (a library function: "
                        f"{type(error).__name__} {error})") from None
    missing = sorted({name for name, _ in libs.values() if get_func(name) is None})
    if missing:
        known = ", ".join(registered_names()) or "none"
        raise LoadError(f"{path}: the model calls library function(s) {', '.join(missing)}, "
                        f"not registered in this process (register them with "
                        f"mlcir.register_func before loading); registered: {known}")
    return libs


def read_library(path: "str | os.PathLike[str]") -> tuple[dict[str, Any], bytes]:
    """The checked ``metadata.json`` and the shared library of the saved model ``path`` (its
    checksum verified; nothing is loaded)."""
    path = Path(path)
    with _open(path) as archive:
        meta = _metadata(path, archive)
        member = meta["shared_library"].get("file")
        if not isinstance(member, str):
            raise LoadError(f"{path}: {METADATA} is corrupt (no valid 'shared_library.file')")
        library = _read(path, archive, member)
    if hashlib.sha256(library).hexdigest() != meta["shared_library"].get("sha256"):
        raise LoadError(f"{path}: {member} does not match its checksum (the file is corrupt)")
    return meta, library


def load(path: "str | os.PathLike[str]") -> Executable:
    """Load a model written by :meth:`Executable.save` or :func:`mlcir.compile`; its functions
    run at once."""
    path = Path(path)
    meta, library = read_library(path)
    sigs = _signatures(path, meta)
    libs = _libraries(path, meta)
    target = Target.parse(meta["target"])
    if target.kind == "cuda":
        return _load_cuda(path, meta, sigs, target, library)
    errors = CallbackErrors()
    callbacks = {symbol: make_callback(name, specs, errors)
                 for symbol, (name, specs) in libs.items()}
    # ctypes needs a file to load; once loaded, the file is not needed any more.
    with tempfile.TemporaryDirectory(prefix="mlcir-load-") as tmp:
        so_path = Path(tmp) / LIBRARY
        so_path.write_bytes(library)
        try:
            lib = SharedObject(so_path)
            if sorted(lib.library_symbols()) != sorted(libs):
                raise LoadError(f"{path}: {LIBRARY} binds library symbols "
                                f"{lib.library_symbols()}, {METADATA} lists {sorted(libs)}")
            lib.bind_library(callbacks)
            for name in sigs:
                lib.packed(name)
        except BuildError as error:
            raise LoadError(f"{path}: {error}") from None
    return Executable(sigs, lib, target, errors, keep_alive=[callbacks, lib], libraries=libs,
                      shared_library=library, saved_metadata=meta)


def _load_cuda(path: Path, meta: dict[str, Any], sigs: dict[str, Signature], target: Target,
               library: bytes) -> Executable:
    """A cuda model: the driver and the GPU are checked before the library is loaded (its
    constructors load the kernels into the driver as soon as it is)."""
    from .cuda import CudaSharedObject, device_capability, device_problem, require_driver

    info = meta.get("cuda")
    if not (isinstance(info, dict) and isinstance(info.get("arch"), str)
            and isinstance(info.get("binary_format"), (str, type(None)))):
        raise LoadError(f"{path}: {METADATA} is corrupt (no valid 'cuda' section)")
    what = f"{path}: the model is compiled for '{target}' and"
    hint = ("Running it needs an NVIDIA GPU and its driver: copy the file to a machine with "
            "one (docs/cuda.md)")
    require_driver(what=what, hint=hint)  # CudaDriverError: the library needs libcuda.so.1
    try:
        problem = device_problem(info["arch"], info["binary_format"] or "isa",
                                 device_capability())
    except BuildError as error:
        raise LoadError(f"{path}: {error}") from None
    if problem is not None:
        raise LoadError(f"{path}: {problem}")
    arities = {name: len(sig.args) + len(sig.results) for name, sig in sigs.items()}
    with tempfile.TemporaryDirectory(prefix="mlcir-load-") as tmp:
        so_path = Path(tmp) / LIBRARY
        so_path.write_bytes(library)
        try:
            lib = CudaSharedObject(so_path, arities, what=what)
            for name in sigs:
                lib.lookup(name)
        except CudaDriverError:
            raise
        except BuildError as error:
            raise LoadError(f"{path}: {error}") from None
    return Executable(sigs, lib, target, CallbackErrors(), keep_alive=[lib],
                      shared_library=library, saved_metadata=meta)
