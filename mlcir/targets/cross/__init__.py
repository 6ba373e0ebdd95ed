"""``llvm`` targets naming a triple, CPU or features (``llvm -mtriple=aarch64-linux-gnu
-mcpu=neoverse-n1``): compiled ahead of time on this machine (:mod:`.toolchain`,
:mod:`.backend`), run here when this machine can, else on the machine they are for or here
under emulation (:mod:`.remote`). docs/deploy.md is the user's guide.
"""

from __future__ import annotations

from .backend import CrossBackend

__all__ = ["CrossBackend"]
