"""mlcir's passes, one module each, registered by their command-line names.

``build_pass_manager("graph-to-loop, canonicalize, mlcir-cpu")`` mixes them with upstream
passes in one pipeline; modules are imported when a pipeline first names one of their passes.
"""

from __future__ import annotations

from .registry import (ModulePass, Pipeline, PassError, build_pass_manager, declare_lazy,
                       describe_all, get_pass, get_pipeline, parse_pipeline, register_pass,
                       register_pipeline, run_pipeline)

declare_lazy({
    "graph-to-loop": "mlcir.passes.graph_to_loop",
    "graph-lower-library-calls": "mlcir.passes.library_calls",
    "graph-bind-params": "mlcir.passes.bind_params",
    "graph-fold-constants": "mlcir.passes.fold_constants",
    "graph-dce": "mlcir.passes.dce",
    "graph-fuse-ewise-fma": "mlcir.passes.fuse_ewise_fma",
    "graph-fuse-ops": "mlcir.passes.fuse_ops",
    "graph-pack-weights": "mlcir.passes.pack_weights",
    "graph-layout-nchwc": "mlcir.passes.layout_nchwc",
    "graph-pad-windows": "mlcir.passes.pad_windows",
    "graph-winograd": "mlcir.passes.winograd",
    "graph-dispatch-library": "mlcir.passes.dispatch_library",
    "mlcir-entry-points": "mlcir.passes.entry_points",
    "mlcir-private-symbols": "mlcir.passes.private_symbols",
    "mlcir-serial-foralls": "mlcir.passes.serial_foralls",
    "mlcir-copies-to-loops": "mlcir.passes.copies_to_loops",
    "mlcir-reshaped-results": "mlcir.passes.reshaped_results",
    "mlcir-distinct-results": "mlcir.passes.distinct_results",
    "mlcir-profile-hooks": "mlcir.passes.profile_hooks",
    "mlcir-bool-storage": "mlcir.passes.bool_storage",
    "mlcir-flatten-globals": "mlcir.passes.flatten_globals",
    "mlcir-lower-vectors": "mlcir.passes.lower_vectors",
    "mlcir-tile-temporaries": "mlcir.passes.tile_temporaries",
    "mlcir-pooling-max": "mlcir.passes.pooling_max",
    "mlcir-approximate-math": "mlcir.passes.approximate_math",
    "mlcir-cpu": "mlcir.passes.pipelines",
    "mlcir-cpu-bufferize": "mlcir.passes.pipelines",
    "mlcir-kernels": "mlcir.passes.pipelines",
    "mlcir-gpu-mark-outputs": "mlcir.passes.gpu_mark_outputs",
    "mlcir-gpu-map": "mlcir.passes.gpu_map",
    "mlcir-gpu-device-buffers": "mlcir.passes.gpu_device_buffers",
    "mlcir-gpu-check-launch": "mlcir.passes.gpu_check_launch",
    "mlcir-gpu-lower-vectors": "mlcir.passes.gpu_lower_vectors",
    "mlcir-cuda": "mlcir.passes.pipelines_cuda",
    "mlcir-cuda-mapped": "mlcir.passes.pipelines_cuda",
})

__all__ = [
    "ModulePass", "PassError", "Pipeline", "build_pass_manager", "describe_all", "get_pass",
    "get_pipeline", "parse_pipeline", "register_pass", "register_pipeline", "run_pipeline",
]
