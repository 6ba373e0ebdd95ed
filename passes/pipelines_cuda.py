"""The ``mlcir-cuda`` pipeline: graph or loop level → kernels in a ``gpu.binary`` (PTX or
cubin) and host code in the LLVM dialect that launches them through the MLIR CUDA runtime.

Stages (docs/cuda.md):

1. the CPU pipeline's front end and bufferization (kernels, entry points, memrefs), with the
   result count of each entry function recorded first (``mlcir-gpu-mark-outputs``);
2. ``inline``: kernels are inlined into the entry functions, so one function holds the
   launches, the intermediates and the globals they read (and uses one stream);
3. ``mlcir-gpu-map`` (schedule's ``bind``, else the default mapping → ``gpu.launch``),
   ``mlcir-gpu-device-buffers`` (copies, ``gpu.alloc``, shared memory), ``mlcir-gpu-check-launch``;
4. upstream: ``gpu-kernel-outlining``, ``gpu-async-region`` (one stream per function,
   synchronised at its end), ``nvvm-attach-target``, ``convert-gpu-to-nvvm`` inside the
   ``gpu.module``, ``gpu-to-llvm`` on the host, ``gpu-module-to-binary``.

Options: ``chip`` (``sm_90``), ``format`` (``isa`` = PTX text, ``bin`` = cubin and ``fatbin``
need ``ptxas``), ``toolkit`` (the CUDA toolkit folder holding ``bin/ptxas``), ``opt-level``
(NVVM's ``O``), ``threads`` (threads per block of the default mapping). The runtime
(``mlcir.targets.cuda``) picks ``format`` and ``toolkit`` from what is installed.
"""

from __future__ import annotations

import re

from mlcir.errors import BuildError

from .pipelines import cpu_bufferize, entry_points, kernel_passes
from .registry import Pipeline, register_pipeline

# Chips LLVM 22's NVPTX back end knows (llc -mtriple=nvptx64-nvidia-cuda -mcpu=help). Anything
# else must be refused here: an unknown chip or a PTX version below the chip's aborts the
# process inside LLVM ("LLVM ERROR: PTX version 6.0 does not support target 'sm_90'").
CHIPS = ("sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75",
         "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
         "sm_101", "sm_101a", "sm_103", "sm_103a", "sm_110", "sm_110a", "sm_120", "sm_120a",
         "sm_121", "sm_121a")
FORMATS = ("isa", "bin", "fatbin")
DEFAULT_CHIP = "sm_90"
DEFAULT_THREADS = 256


def check_options(chip: str, fmt: str, opt_level: int, threads: int, toolkit: str = "") -> None:
    """Refuse option values that would abort LLVM or make no sense, naming the option."""
    if chip not in CHIPS:
        raise BuildError(f"unknown CUDA architecture '{chip}'; one of {', '.join(CHIPS)}")
    if fmt not in FORMATS:
        raise BuildError(f"unknown CUDA binary format '{fmt}'; one of {', '.join(FORMATS)} "
                         "(isa = PTX text, bin = cubin, fatbin = fat binary)")
    if not 0 <= opt_level <= 3:
        raise BuildError(f"CUDA opt-level must be 0..3, got {opt_level}")
    if not 1 <= threads <= 1024:
        raise BuildError(f"threads per block of the default mapping must be 1..1024, got {threads}")
    if toolkit and re.search(r"[\s{}]", toolkit):
        raise BuildError(f"CUDA toolkit path {toolkit!r} contains spaces or braces, which a pass "
                         "option cannot hold")


def cuda_kernels(layout: str = "packed") -> list[str]:
    """The graph passes to kernels of a CUDA build and its tuning: the CPU's, with 3x3
    convolutions direct (Winograd's transforms are CPU vector code in OpenMP loops)."""
    return kernel_passes(layout=layout, winograd=False)


def gpu_mapping(threads: int) -> list[str]:
    return ["inline", "symbol-dce", f"mlcir-gpu-map{{threads={threads}}}",
            "mlcir-gpu-device-buffers", "mlcir-gpu-check-launch",
            "func.func(convert-linalg-to-loops)", "canonicalize", "cse"]


def gpu_codegen(chip: str, fmt: str, toolkit: str, opt_level: int) -> list[str]:
    kit = f" toolkit={toolkit}" if toolkit else ""
    return [
        "mlcir-private-symbols",
        "gpu-kernel-outlining",
        "func.func(gpu-async-region)",
        "convert-vector-to-scf",
        "convert-scf-to-cf",
        "convert-nvvm-to-llvm",
        "convert-func-to-llvm",
        "expand-strided-metadata",
        f"nvvm-attach-target{{chip={chip} O={opt_level}}}",
        "lower-affine",
        "convert-arith-to-llvm",
        "convert-index-to-llvm",
        "canonicalize",
        "cse",
        "mlcir-gpu-lower-vectors",
        "gpu.module(convert-gpu-to-nvvm, canonicalize, cse, reconcile-unrealized-casts)",
        "gpu-to-llvm",
        f"gpu-module-to-binary{{format={fmt}{kit}}}",
        "convert-math-to-llvm",
        "canonicalize",
        "cse",
        "reconcile-unrealized-casts",
    ]


def _mapped(threads: int, graph: bool = True) -> list[str]:
    """Graph or loop level (``graph=False``: loop-level kernels already) to ``gpu.launch`` ops
    on device buffers (per-tile temporaries stay whole: a GPU kernel cannot allocate)."""
    return ((cuda_kernels() if graph else []) + entry_points() + ["mlcir-gpu-mark-outputs"]
            + cpu_bufferize(tile_temporaries=False) + gpu_mapping(threads))


def cuda_pipeline(chip: str = DEFAULT_CHIP, fmt: str = "isa", toolkit: str = "",
                  opt_level: int = 3, threads: int = DEFAULT_THREADS, graph: bool = True) -> str:
    check_options(chip, fmt, opt_level, threads, toolkit)
    return ", ".join(_mapped(threads, graph) + gpu_codegen(chip, fmt, toolkit, opt_level))


def _cuda(options: dict[str, str]) -> str:
    try:
        return cuda_pipeline(options.get("chip", DEFAULT_CHIP), options.get("format", "isa"),
                             options.get("toolkit", ""), int(options.get("opt-level", "3")),
                             int(options.get("threads", str(DEFAULT_THREADS))),
                             options.get("graph", "1") not in ("0", "false"))
    except ValueError as error:
        raise BuildError(f"pipeline 'mlcir-cuda': {error}") from None


register_pipeline(Pipeline(
    "mlcir-cuda", "Graph or loop level to GPU kernels (gpu.binary with PTX or cubin) and LLVM "
    "host code that launches them through the MLIR CUDA runtime", _cuda,
    {"chip": f"NVVM chip (default {DEFAULT_CHIP})",
     "format": "isa (PTX text, the default), bin (cubin) or fatbin; bin/fatbin need ptxas",
     "toolkit": "CUDA toolkit folder with bin/ptxas (for bin/fatbin)",
     "opt-level": "NVVM optimization level 0..3 (default 3)",
     "threads": f"threads per block of the default mapping (default {DEFAULT_THREADS})",
     "graph": "0: the module is loop-level kernels already (a build's codegen stage)"}))
register_pipeline(Pipeline(
    "mlcir-cuda-mapped", "Graph or loop level to gpu.launch ops on device buffers, before "
    "outlining (what mlcir-cuda compiles; for reading the mapping)",
    lambda options: ", ".join(_mapped(int(options.get("threads", str(DEFAULT_THREADS))))),
    {"threads": f"threads per block of the default mapping (default {DEFAULT_THREADS})"}))
