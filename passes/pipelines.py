"""Named codegen pipelines: ``mlcir-cpu`` (graph or loop level → LLVM dialect, host CPU).

Each is a pipeline string over registered passes (mlcir's and upstream's), so it prints,
composes and runs the same from Python and from ``mlcir-opt``.
"""

from __future__ import annotations

from .registry import Pipeline, register_pipeline

BUFFERIZE = ("one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map}")


# Graph level → one loop-level kernel per distinct op (or fused group): the kernels a build
# schedules and tuning sees (both take them from the build plan, mlcir/targets/plan.py).
# Boolean tensors are stored as bytes from here on (``mlcir-bool-storage``); constant matmul
# weights are packed into panels (``graph-pack-weights``) and convolution chains put in the
# blocked NCHW<c>c layout with packed filters (``graph-layout-nchwc``) after folding made the
# weights constants; a blocked window op's padding is then written by the kernel that makes its
# input (``graph-pad-windows``, before fusion puts the padding in that kernel).
KERNELS = ["graph-fold-constants", "graph-layout-nchwc", "graph-pack-weights", "graph-dce",
           "graph-pad-windows", "graph-winograd", "graph-fuse-ops", "graph-to-loop", "mlcir-bool-storage"]
LAYOUTS = ("packed", "direct", "none")
# The passes that change layouts (off with layout "none"; "direct" keeps all but Winograd).
LAYOUT_PASSES = ("graph-layout-nchwc", "graph-pack-weights", "graph-pad-windows",
                 "graph-winograd")
# The vector width the layout passes assume when nothing says (mlcir-opt): a build passes its
# target's (mlcir/targets/cpu/facts.py).
STANDALONE_LANES = 16


def kernel_passes(lanes: int = STANDALONE_LANES, layout: str = "packed",
                  winograd: bool = True) -> list[str]:
    """The graph passes to loop-level kernels, with layouts sized for vectors of ``lanes``
    f32: channel blocks of ``lanes`` (``graph-layout-nchwc``), weight panels of two vectors
    (``graph-pack-weights``), poolings covered by whole vectors (``graph-to-loop``).
    ``layout`` "none" leaves layouts alone, "direct" (and ``winograd=False``) computes 3x3
    convolutions directly (docs/graph-passes.md)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    options = {"graph-layout-nchwc": f"{{lanes={lanes}}}",
               "graph-pack-weights": f"{{panel={2 * lanes}}}",
               "graph-to-loop": f"{{lanes={lanes}}}"}
    skipped = (set(LAYOUT_PASSES) if layout == "none" else
               {"graph-winograd"} if layout == "direct" or not winograd else set())
    return [name + options.get(name, "") for name in KERNELS if name not in skipped]


def entry_points() -> list[str]:
    """Loop-level kernels → library calls declared and entry points ready for codegen."""
    return ["graph-lower-library-calls", "mlcir-entry-points"]


def cpu_frontend() -> list[str]:
    """Graph level → loop-level kernels on tensors, library calls and entry points ready."""
    return KERNELS + entry_points()


def cpu_bufferize(tile_temporaries: bool = True) -> list[str]:
    """Tensors → memrefs, in this order:

    - the accumulators of register tiles, read and written at one place in every step of
      their reduction loops, become vectors those loops carry
      (``loop-invariant-subset-hoisting``): left in memory, LLVM kept them in registers only in
      serial loops, not in OpenMP-outlined parallel ones (parallel convolutions ran twice as
      slow per thread);
    - upstream elementwise ops on tensors (``arith.addf`` on a ``tensor<…>``, which nothing
      bufferizes) become ``linalg.generic``;
    - temporaries used a tile at a time are allocated per tile (``mlcir-tile-temporaries``,
      then ``eliminate-empty-tensors`` again so that a tile inserted into a tensor, as a
      padding's border strips, is still written in place; not for CUDA, whose tiles become
      kernels that cannot allocate);
    - bufferization, then ``canonicalize`` at once: a tiled kernel returns the result of the
      ``scf.for`` that carried its output, and only that fold shows it to be the destination
      argument (or a hoistable allocation); without it every scheduled kernel copied its whole
      output at the end (docs/measurements/lowering-rules.md#output-copies);
    - results become out-parameters, and one computed in a reshaped temporary (a layout
      change, a pointwise convolution over ``H*W``) is written through a view of its
      out-parameter instead of copied there (``mlcir-reshaped-results``: 3.2 MB less per call
      for ResNet-50's 1x1 input layout change); per-tile buffers are allocated once before
      the serial loops that reuse them (``buffer-loop-hoisting``; inside a parallel loop they stay, one
      per thread: a ``malloc`` per row had cost MobileNetV2's blocks 5%); intermediates are
      freed;
    - copies between strided views become loops (``mlcir-copies-to-loops``); the serial
      foralls a schedule created become loops and vector ops are lowered (both need
      memrefs)."""
    return ["mlcir-distinct-results", "loop-invariant-subset-hoisting",
            "convert-elementwise-to-linalg", "eliminate-empty-tensors",
            *(["mlcir-tile-temporaries", "eliminate-empty-tensors"] if tile_temporaries else []),
            BUFFERIZE, "canonicalize",
            "drop-equivalent-buffer-results", "mlcir-distinct-results",
            "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}",
            "mlcir-reshaped-results",
            "canonicalize", "func.func(buffer-loop-hoisting)", "buffer-deallocation-pipeline",
            "mlcir-copies-to-loops",
            "mlcir-serial-foralls", "mlcir-lower-vectors", "canonicalize", "cse"]


def cpu_to_llvm(threads: int) -> list[str]:
    """Bufferized kernels → LLVM dialect. ``scf.forall`` loops run on OpenMP threads
    (``threads`` > 0 fixes the count at build time; 0 leaves it to the runtime).

    Constant globals are made one-dimensional first (``mlcir-flatten-globals``: LLVM
    translates a nested initial value row by row, which took minutes for ResNet-50's
    weights). Private functions are renamed (``mlcir-private-symbols``) before any pass
    declares a C library function. Order matters (measured): ``finalize-memref-to-llvm`` before
    ``convert-scf-to-cf`` (the ``memref.alloca_scope`` that OpenMP loops get must still have
    one block), and ``expand-strided-metadata`` before ``lower-affine``.
    """
    num = f"{{num-threads={threads}}}" if threads > 0 else ""
    return [
        "mlcir-flatten-globals",
        "mlcir-private-symbols",
        "mlcir-approximate-math",
        "mlcir-pooling-max",  # after mlcir-lower-vectors, which rebuilds the max
        "scf-forall-to-parallel",
        f"convert-scf-to-openmp{num}",
        "convert-vector-to-scf",
        "func.func(convert-linalg-to-loops)",
        "expand-strided-metadata",
        "lower-affine",
        "finalize-memref-to-llvm",
        "convert-scf-to-cf",
        "convert-vector-to-llvm{vector-contract-lowering=outerproduct}",
        "convert-math-to-llvm",
        "convert-math-to-libm",
        # math-to-libm scalarizes vector math (a vectorized erf) with vector.extract/insert.
        "convert-vector-to-llvm",
        "convert-arith-to-llvm",
        "convert-index-to-llvm",
        "convert-ub-to-llvm",
        "convert-openmp-to-llvm",
        "convert-func-to-llvm",
        "convert-cf-to-llvm",
        "reconcile-unrealized-casts",
    ]


def cpu_codegen(threads: int, profile: bool = False) -> list[str]:
    """Loop-level kernels (scheduled or not) → LLVM dialect: the build plan's codegen."""
    hooks = ["mlcir-profile-hooks"] if profile else []
    return entry_points() + cpu_bufferize() + hooks + cpu_to_llvm(threads)


def _flag(options: dict[str, str], name: str, default: str = "0") -> bool:
    return options.get(name, default) not in ("0", "false")


def _kernels(options: dict[str, str]) -> list[str]:
    return kernel_passes(int(options.get("lanes", str(STANDALONE_LANES))),
                         options.get("layout", "packed"), _flag(options, "winograd", "1"))


def _cpu(options: dict[str, str]) -> str:
    graph = _kernels(options) if _flag(options, "graph", "1") else []
    return ", ".join(graph + cpu_codegen(int(options.get("threads", "0")),
                                         _flag(options, "profile")))


KERNEL_OPTIONS = {
    "lanes": f"f32 lanes of a vector register: channel block, panel width/2 (default "
             f"{STANDALONE_LANES}; builds use their target's)",
    "layout": "packed (the default), direct (no Winograd) or none (layouts left alone)",
    "winograd": "0: compute 3x3 convolutions directly"}
register_pipeline(Pipeline(
    "mlcir-cpu", "Graph or loop level to the LLVM dialect for the host CPU (bufferization "
    "included; scf.forall on OpenMP threads)", _cpu,
    {"threads": "OpenMP threads for parallel loops (0: decided at run time)",
     "profile": "1: time every call of the public functions (mlcir-profile-hooks)",
     "graph": "0: the module is loop-level kernels already (a build's codegen stage)",
     **KERNEL_OPTIONS}))
register_pipeline(Pipeline(
    "mlcir-kernels", "Graph level to loop-level kernels (the kernels tuning sees)",
    lambda options: ", ".join(_kernels(options)), KERNEL_OPTIONS))
register_pipeline(Pipeline(
    "mlcir-cpu-bufferize", "Graph or loop level to bufferized memrefs, before loops and LLVM",
    lambda options: ", ".join(_kernels(options) + entry_points() + cpu_bufferize()),
    KERNEL_OPTIONS))
