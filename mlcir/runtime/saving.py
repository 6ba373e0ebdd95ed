"""``Executable.save``: an executable's shared library written as a saved model.

The library comes from the backend of the executable's target kind (:mod:`mlcir.targets`
registers one maker per kind here: the runtime sits below the backends and cannot import
them); a loaded model is written again unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from mlcir.errors import BuildError

from .model_file import COMMON_KEYS, CompiledLibrary, metadata, write_model

LibraryMaker = Callable[[Any], CompiledLibrary]
_LIBRARY_MAKERS: dict[str, LibraryMaker] = {}


def register_library_maker(kind: str, maker: LibraryMaker) -> None:
    """Make ``maker(executable)`` the way executables of target kind ``kind`` are saved."""
    _LIBRARY_MAKERS[kind] = maker


def _library(executable: Any) -> CompiledLibrary:
    if executable.shared_library is not None:  # a loaded model saved again, unchanged
        saved = executable.saved_metadata or {}
        return CompiledLibrary(executable.shared_library, saved.get("cpu_features", []),
                               {k: v for k, v in saved.items() if k not in COMMON_KEYS})
    maker = _LIBRARY_MAKERS.get(executable.target.kind)
    if maker is None:
        known = " and ".join(f"'{kind}'" for kind in _LIBRARY_MAKERS)
        raise BuildError(f"saving a model compiled for '{executable.target.kind}' is not "
                         f"supported (only {known} models can be saved)")
    return maker(executable)


def save(executable: Any, path: "str | os.PathLike[str]") -> Path:
    """Write ``executable`` to ``path`` (replaced as a whole: a reader never sees half a file)."""
    path = Path(path)
    library = _library(executable)
    write_model(path, metadata(executable.signatures, executable.libraries, executable.target,
                               library), library.data)
    return path
