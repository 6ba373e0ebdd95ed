"""The saved-model file: its layout, its ``metadata.json``, and the checks made on reading it.

A saved model (``Executable.save(path)``, ``mlcir.compile(mod, target, path)``) is a zip
archive with two members:

- ``metadata.json``: the format name and version, the mlcir and MLIR versions that wrote it,
  the platform, the target, each public function's signature (argument and result names,
  shapes, dtypes, which arguments it writes) and the library functions its code calls (symbol,
  registered name, rank and dtype of each memref argument); for a ``cuda`` model, a ``cuda``
  section (chip, binary format, the kernel modules embedded in the library);
- ``model.so``: the shared library, made by the target's backend (:mod:`mlcir.targets`).

:func:`read_library` checks the file before anything is loaded from it and answers every
problem with a :class:`~mlcir.errors.LoadError` naming the file and the problem. Loading the
library is the backend's job (``mlcir.targets.backend_for(target).load``). docs/cli.md
documents the format.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import platform
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mlcir.errors import LoadError, TargetError
from mlcir.target import Target
from mlcir.version import __version__

from .library import get_func, registered_names
from .signature import Signature

FORMAT = "mlcir-model"
FORMAT_VERSION = 1
METADATA = "metadata.json"
LIBRARY = "model.so"


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


def cpu_features() -> list[str]:
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


@dataclass(frozen=True)
class CompiledLibrary:
    """A model's shared library as a backend made it: its bytes, the CPU features its code
    needs, and the target's own sections of ``metadata.json`` (``cuda``: the kernels)."""

    data: bytes
    cpu_features: list[str]
    sections: dict[str, Any] = field(default_factory=dict)


def metadata(signatures: dict[str, Signature], libraries: dict[str, tuple[str, list]],
             target: Target, library: CompiledLibrary,
             platform: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``metadata.json`` of a model whose shared library is ``library``, built for
    ``platform`` (default: this machine's)."""
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "mlcir_version": __version__,
        "mlir_version": _mlir_version(),
        "platform": platform or _platform(),
        "cpu_features": list(library.cpu_features),
        "target": str(target),
        "functions": [sig.to_json() for sig in signatures.values()],
        "library_functions": [
            {"symbol": symbol, "name": name,
             "args": [{"rank": int(rank), "dtype": np.dtype(dtype).name} for rank, dtype in specs]}
            for symbol, (name, specs) in libraries.items()],
        "shared_library": {"file": LIBRARY, "sha256": hashlib.sha256(library.data).hexdigest(),
                           "bytes": len(library.data)},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    return seal({**meta, **library.sections})


def metadata_checksum(meta: dict[str, Any]) -> str:
    """The SHA-256 of ``meta`` without its ``metadata_sha256`` entry (canonical JSON). The
    metadata holds the library's checksum, so this one covers the whole model."""
    body = {key: value for key, value in meta.items() if key != "metadata_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                          .encode("utf-8")).hexdigest()


def seal(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with its ``metadata_sha256`` (computed last, over every other entry)."""
    return {**meta, "metadata_sha256": metadata_checksum(meta)}


# What :func:`metadata` writes for every target; anything else is a target's own section.
COMMON_KEYS = ("format", "format_version", "mlcir_version", "mlir_version", "platform",
               "cpu_features", "target", "functions", "library_functions", "shared_library",
               "created", "metadata_sha256")


def write_model(path: Path, meta: dict[str, Any], library: bytes) -> None:
    """The archive of ``meta`` and ``library``, written atomically to ``path``. The library is
    stored, not deflated: it is mostly weights, which hardly compress, and deflating them
    took a large share of ``mlcir compile`` (docs/decisions.md#compile-time)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(METADATA, json.dumps(meta, indent=2) + "\n")
        archive.writestr(LIBRARY, library, compress_type=zipfile.ZIP_STORED)
    write_atomically(path, buffer.getbuffer())


def write_atomically(path: Path, data: bytes | memoryview) -> None:
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


@dataclass
class SavedModel:
    """What :func:`mlcir.compile` wrote: the file, its ``metadata.json``, the functions'
    signatures and the LLVM-dialect module that was compiled (host code plus ``gpu.binary``
    kernels for cuda). :func:`mlcir.load` runs the file."""

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


# -- reading ---------------------------------------------------------------------------------

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


def _metadata(path: Path, archive: zipfile.ZipFile, here: bool = True) -> dict[str, Any]:
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
    if meta.get("mlcir_version") != __version__:
        raise LoadError(f"{path}: saved by mlcir {meta.get('mlcir_version')}, this is mlcir "
                        f"{__version__}; compiled code is tied to the version that built it "
                        "(recompile the model)")
    machine = _platform()
    if here and meta.get("platform") != machine:
        saved = meta.get("platform") or {}
        raise LoadError(f"{path}: compiled for {saved.get('machine')} ({saved.get('system')}), "
                        f"this machine is {machine['machine']} ({machine['system']}); its "
                        f"target is '{meta.get('target')}'")
    missing = sorted(set(meta.get("cpu_features") or []) - set(cpu_features()))
    if here and missing and cpu_features():
        raise LoadError(f"{path}: compiled for a CPU with {', '.join(missing)}, which this CPU "
                        "lacks (recompile the model on this machine)")
    model_target(path, meta)
    for key, kind in (("target", str), ("functions", list), ("library_functions", list),
                      ("shared_library", dict)):
        if not isinstance(meta.get(key), kind):
            raise LoadError(f"{path}: {METADATA} is corrupt (no valid '{key}')")
    return meta


def model_target(path: Path, meta: dict[str, Any]) -> Target:
    """The target ``metadata.json`` names (a :class:`~mlcir.errors.LoadError` if it names none
    that this mlcir knows)."""
    try:
        return Target.parse(meta.get("target", ""))
    except (TargetError, AttributeError):
        raise LoadError(f"{path}: {METADATA} is corrupt (target {meta.get('target')!r})") from None


def model_signatures(path: Path, meta: dict[str, Any]) -> dict[str, Signature]:
    """The signatures of a checked ``metadata.json``'s functions."""
    try:
        sigs = [Signature.from_json(d) for d in meta["functions"]]
    except (KeyError, TypeError, ValueError) as error:
        raise LoadError(f"{path}: {METADATA} is corrupt (a function signature: "
                        f"{type(error).__name__} {error})") from None
    return {sig.name: sig for sig in sigs}


def model_library_functions(path: Path, meta: dict[str, Any]) -> dict[str, tuple[str, list]]:
    """``symbol -> (registered name, [(rank, dtype)])`` of the library functions the model
    calls, as a checked ``metadata.json`` lists them; each must be registered in this process
    (``mlcir.register_func``) before the model loads."""
    try:
        libs = {d["symbol"]: (d["name"], [(int(a["rank"]), np.dtype(a["dtype"]))
                                          for a in d["args"]])
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


def read_library(path: "str | os.PathLike[str]", *,
                 here: bool = True) -> tuple[dict[str, Any], bytes]:
    """The checked ``metadata.json`` and the shared library of the saved model ``path`` (its
    checksum verified; nothing is loaded). ``here=False`` skips the checks that the model's
    machine is this one (for a model run elsewhere or under emulation)."""
    path = Path(path)
    with _open(path) as archive:
        meta = _metadata(path, archive, here)
        member = meta["shared_library"].get("file")
        if not isinstance(member, str):
            raise LoadError(f"{path}: {METADATA} is corrupt (no valid 'shared_library.file')")
        library = _read(path, archive, member)
    if hashlib.sha256(library).hexdigest() != meta["shared_library"].get("sha256"):
        raise LoadError(f"{path}: {member} does not match its checksum (the file is corrupt)")
    if meta.get("metadata_sha256") != metadata_checksum(meta):
        raise LoadError(f"{path}: {METADATA} does not match its checksum 'metadata_sha256' (it "
                        "was edited or corrupted after saving; the signatures it lists may not "
                        "be the library's: recompile the model)")
    return meta, library
