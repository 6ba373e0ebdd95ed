"""What runs on the nodes of a Ray cluster: build tasks, and one measurement actor per node;
the search's chunks of candidates and a workload's reference data.

Builds and measurements hand the work to the tuner's worker processes (``python -m mlcir.tune.worker build|run``,
:mod:`mlcir.tune.worker_process`), so a candidate that crashes or hangs costs a subprocess on
its node, with a time-out as on one machine. Files live in a temporary folder of the node, named
by content hash: the driver's disk is never read here. Imported only where Ray is.
"""

from __future__ import annotations

import glob
import hashlib
import io
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import ray

from ..worker_process import WorkerProcess
from .fingerprint import host_fingerprint

# The kernels parsed in this Ray worker process for the search, by hash: (context, module).
_kernels: dict[str, tuple[Any, Any]] = {}

# The builder subprocess of this Ray worker process, kept between build tasks (Ray reuses its
# worker processes), so a build does not pay for starting Python and MLIR.
_builders: list[WorkerProcess] = []


def _job_folders() -> str:
    """The pattern of the folders of this Ray job's processes on this node."""
    context = ray.get_runtime_context()
    name = f"mlcir-node-{context.get_node_id()[:16]}-{context.get_job_id()}-*"
    return str(Path(tempfile.gettempdir()) / name)


def _folder() -> Path:
    """This Ray worker process's folder (removed by the node's actor when tuning ends)."""
    folder = Path(_job_folders().replace("*", str(os.getpid())))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@ray.remote(num_returns=2, max_retries=0)
def build(kernel_hash: str, kernel_text: str, trace: dict[str, Any], target: str,
          timeout: float) -> tuple[dict[str, Any], bytes]:
    """Build one candidate; returns (``{"ok", "hash", "build_secs"}`` or ``{"ok": False,
    "error"}``, the shared library's bytes), the second left in the object store."""
    folder = _folder()
    kernel = folder / f"{kernel_hash}.mlir"
    if not kernel.exists():
        kernel.write_text(kernel_text)
    if not _builders:
        _builders.append(WorkerProcess("build", {"OMP_NUM_THREADS": "1"}))
    out = folder / "candidate.so"
    response = _builders[0].call({"id": 1, "kernel": str(kernel), "trace": trace,
                                  "target": target, "out": str(out)}, timeout)
    if not response.get("ok"):
        return {"ok": False, "error": response["error"]}, b""
    data = out.read_bytes()
    out.unlink()
    return {"ok": True, "hash": hashlib.sha256(data).hexdigest()[:24],
            "build_secs": response["build_secs"]}, data


@ray.remote(max_retries=0)
def make_candidates(shared: tuple[str, str, Any, Any], jobs: list[Any]) -> list[Any]:
    """Make a chunk of one batch of the search (:mod:`.search`): ``shared`` is the kernel's hash
    and text, the design space and the feature extractor."""
    from mlcir.ir import make_context, parse

    from ..search import SearchContext, make_candidate

    kernel_hash, kernel_text, space, extractor = shared
    if kernel_hash not in _kernels:
        context = make_context()
        with context:
            _kernels[kernel_hash] = (context, parse(kernel_text))
    context, kernel = _kernels[kernel_hash]
    cx = SearchContext(kernel, space, None, extractor, random.Random(0))  # type: ignore[arg-type]
    with context:
        return [make_candidate(cx, job) for job in jobs]


@ray.remote(max_concurrency=1, max_restarts=0, max_task_retries=0)
class MeasureActor:
    """The one measurer of its node: one candidate at a time, in a runner subprocess."""

    def __init__(self, threads: int):
        self.threads = threads
        self.process = WorkerProcess("run")
        self.folder = _folder()

    def describe(self) -> dict[str, Any]:
        """The node's id and the fingerprint found here."""
        return {"node": ray.get_runtime_context().get_node_id(),
                "fingerprint": host_fingerprint(self.threads)}

    def measure(self, request: dict[str, Any], library: bytes, library_hash: str,
                data_hash: str, data: list[ray.ObjectRef], timeout: float) -> dict[str, Any]:
        """Check and time one library on the workload's reference data (fetched once per node:
        ``data`` is wrapped in a list so Ray passes the reference, not the bytes)."""
        data_path = self.folder / f"{data_hash}.npz"
        if not data_path.exists():
            tmp = data_path.with_suffix(".tmp")
            tmp.write_bytes(ray.get(data[0]))
            tmp.rename(data_path)
        so_path = self.folder / f"{library_hash}.so"
        so_path.write_bytes(library)
        try:
            return self.process.call({**request, "so": str(so_path), "data": str(data_path),
                                      "threads": self.threads}, timeout)
        finally:
            so_path.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop the runner subprocess; remove the folders of this job's processes here."""
        self.process.close()
        for folder in glob.glob(_job_folders()):
            shutil.rmtree(folder, ignore_errors=True)


@ray.remote(num_returns=2, max_retries=0)
def reference_data(kernel_text: str) -> tuple[dict[str, Any], bytes]:
    """:func:`make_reference` on a node, the bytes left in the object store."""
    return make_reference(kernel_text)


def make_reference(kernel_text: str) -> tuple[dict[str, Any], bytes]:
    """A workload's random inputs and the outputs of its kernel compiled without a schedule:
    ``{"hash", "signature"}`` and the ``.npz`` bytes."""
    from mlcir.ir import make_context, parse
    from mlcir.targets import compile_module

    from ..evaluation import reference_arrays

    with make_context():
        kernel = parse(kernel_text)
        ex = compile_module(kernel)
        arrays = reference_arrays(ex, kernel)
        signature = ex["main"].signature.to_json()
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    return {"hash": hashlib.sha256(data).hexdigest()[:24], "signature": signature}, data
