"""The CUDA target: PTX/cubin built without a GPU, mappings checked numerically by running the
mapped loops serially on the CPU, launch limits and missing-driver errors; and, marked ``gpu``
(skipped where ``mlcir.testing.hardware.cuda_available()`` is false), kernels and models run on
a GPU against numpy."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.passes import run_pipeline
from mlcir.passes.gpu_check_launch import check_sizes, launch_sizes
from mlcir.passes.gpu_map import default_tiling
from mlcir.passes.gpu_ir import in_launch, walk
from mlcir.passes.pipelines import cpu_bufferize, cpu_frontend, cpu_to_llvm
from mlcir.runtime import cuda
from mlcir.testing import kernels, mlp
from mlcir.testing.hardware import cuda_available
from mlcir.tune.space import default_space

NO_GPU = pytest.mark.skipif(cuda_available(), reason="checks what happens without a GPU")
# The GPU mapping with the launches left out: mapped foralls run serially on the CPU, so the
# numbers say whether every block/thread computes the right elements.
EMULATE = ", ".join(cpu_frontend() + cpu_bufferize() + [
    "inline", "symbol-dce", "mlcir-gpu-map{launch=0}", "scf-forall-to-for"] + cpu_to_llvm(1))


def elementwise(m: int = 64, n: int = 256) -> kernels.Kernel:
    """``Z = exp(X) * Y``: one elementwise block ``Z`` (with a libdevice call)."""
    t = f"tensor<{m}x{n}xf32>"
    ident = "affine_map<(i, j) -> (i, j)>"
    text = f"""
func.func @main(%X: {t}, %Y: {t}) -> {t} {{
  %e = tensor.empty() : {t}
  %z = linalg.generic {{indexing_maps = [{ident}, {ident}, {ident}],
                        iterator_types = ["parallel", "parallel"], loop.block = "Z"}}
       ins(%X, %Y : {t}, {t}) outs(%e : {t}) {{
    ^bb0(%a: f32, %b: f32, %o: f32):
      %x = math.exp %a : f32
      %r = arith.mulf %x, %b : f32
      linalg.yield %r : f32
  }} -> {t}
  return %z : {t}
}}"""
    return text, lambda x, y: np.exp(x) * y


KERNELS = {
    "matmul": lambda: kernels.matmul(128, 128, 64),
    "elementwise": elementwise,
    "softmax": lambda: kernels.softmax(32, 128),
}


def ptx(mod, target: str = "cuda -format=isa") -> dict[str, str]:
    module = mod if isinstance(mod, ir.Module) else mlcir.parse(mod)
    with module.context:
        work = mlcir.ir.clone_module(module)
        cuda.compile_cuda(work, target)
        return cuda.ptx_of(work)


def mapped(mod) -> ir.Module:
    """The module after mapping (gpu.launch ops on device buffers, before outlining)."""
    module = mod if isinstance(mod, ir.Module) else mlcir.parse(mod)
    with module.context:
        work = mlcir.ir.clone_module(module)
        run_pipeline(work, "mlcir-cuda-mapped")
        return work


def emulate(mod, *inputs: np.ndarray) -> np.ndarray:
    """Run the GPU-mapped loops serially on the CPU (shared buffers become plain ones)."""
    module = mod if isinstance(mod, ir.Module) else mlcir.parse(mod)
    with module.context:
        work = mlcir.ir.clone_module(module)

        def plain(op):
            if op.name == "bufferization.alloc_tensor" and "memory_space" in op.attributes:
                del op.attributes["memory_space"]
            return ir.WalkResult.ADVANCE

        work.operation.walk(plain)
        probe = mlcir.ir.clone_module(work)
        run_pipeline(probe, ", ".join(cpu_frontend() + cpu_bufferize() + [
            "inline", "symbol-dce", "mlcir-gpu-map{launch=0}"]))
        assert "#gpu.thread<x>" in str(probe)  # the serial run covers mapped loops
    return mlcir.build(work, pipeline=EMULATE).main(*inputs)


def bound_matmul(m=64, n=64, k=32, tile=16) -> mlcir.Schedule:
    sch = mlcir.Schedule(kernels.matmul(m, n, k)[0])
    c = sch.get_block("C")
    i, j, kk = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    sch.reorder(i0, j0, i1, j1, kk)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch


def shared_matmul(m=128, n=128, k=64, tile=16) -> mlcir.Schedule:
    """Blocks of ``tile x tile`` threads; A and B staged in shared memory per k step."""
    sch = mlcir.Schedule(kernels.matmul(m, n, k)[0])
    c = sch.get_block("C")
    i, j, kk = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    k0, k1 = sch.split(kk, [None, tile])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    for index in (0, 1):
        sch.compute_at(sch.cache_read(c, index, "shared"), k0)
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch


def launches(module: ir.Module) -> list[tuple[str, list, list]]:
    """(kernel name, grid, block) of each gpu.launch."""
    out = []
    for launch in walk(module.operation, ("gpu.launch",)):
        grid, block = launch_sizes(launch)
        out.append((ir.FlatSymbolRefAttr(launch.attributes["function"]).value, grid, block))
    return out


# -- PTX without a GPU -----------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_unscheduled_matmul_builds_ptx_for_the_chip(ctx, arch):
    kernels_ptx = ptx(kernels.matmul(64, 64, 32)[0], f"cuda -arch={arch} -format=isa")
    assert sorted(kernels_ptx) == ["main_C", "main_C_init"]
    for name, text in kernels_ptx.items():
        assert f".target {arch}" in text
        assert re.search(rf"\.visible \.entry {name}\(", text)
        assert "%tid.x" in text and ("%ctaid.x" in text or "%ctaid.y" in text)
        assert ".maxntid" in text  # ptxas bounds the registers by the block size


def test_default_mapping_puts_the_innermost_dim_on_threads_x(ctx):
    module = mapped(kernels.matmul(64, 64, 32)[0])
    # 256 threads: x covers the 64 columns, y 4 rows; the grid covers the rest.
    assert launches(module) == [("main_C_init", [1, 16, 1], [64, 4, 1]),
                                ("main_C", [1, 16, 1], [64, 4, 1])]
    tiling = default_tiling([4096, 4096, 4096], ["spatial", "spatial", "reduction"], 256)
    assert tiling.thread_axes == {0: "y", 1: "x"} and tiling.thread_sizes == [1, 1, 0]
    assert tiling.block_sizes == [1, 256, 0]
    # A grid beyond 65535 along y: each thread takes several rows.
    big = default_tiling([2 ** 20, 2], ["spatial", "spatial"], 1)
    assert big.thread_axes == {0: "y", 1: "x"}
    assert big.block_sizes == [32, 1] and big.thread_sizes == [32, 1]  # 32768 blocks along y


def test_threads_option_sets_the_default_block_size(ctx):
    text = elementwise(64, 256)[0]
    assert ".maxntid 256, 1, 1" in ptx(text)["main_Z"]
    assert ".maxntid 32, 1, 1" in ptx(text, "cuda -threads=32 -format=isa")["main_Z"]
    assert "threads=32" in cuda.pipeline_for("cuda -threads=32")


def test_bound_schedule_launches_its_grid_and_blocks(ctx):
    sch = bound_matmul()
    assert launches(mapped(sch.mod)) == [("main_C_init", [1, 16, 1], [64, 4, 1]),
                                         ("main_C", [4, 4, 1], [16, 16, 1])]
    text = ptx(sch.mod)["main_C"]
    assert "%ctaid.y" in text and "%tid.y" in text


def test_shared_memory_schedule_emits_shared_ptx(ctx):
    sch = shared_matmul()
    module = mapped(sch.mod)
    text = str(module)
    assert "workgroup(%" in text and "memref<16x16xf32, #gpu.address_space<workgroup>>" in text
    kernels_ptx = ptx(sch.mod)
    main = kernels_ptx["main_C"]
    assert main.count(".shared .align") == 2  # A and B tiles
    assert "st.shared" in main and "ld.shared" in main
    assert main.count("bar.sync") >= 2  # after the copies, after the compute
    assert ".shared" not in kernels_ptx["main_C_init"]


def test_cubin_when_ptxas_is_installed(ctx):
    if cuda.find_toolkit() is None:
        pytest.skip("no CUDA toolkit with ptxas on this machine")
    module = mlcir.parse(kernels.matmul(64, 64, 32)[0])
    fmt = cuda.compile_cuda(module, "cuda -arch=sm_80")
    assert fmt.format == "bin" and "ptxas found" in fmt.reason
    binaries = cuda.kernel_binaries(module)
    assert sorted(binaries) == ["main_C", "main_C_init"]
    assert all(f == "bin" and data[:4] == b"\x7fELF" for f, data in binaries.values())


# -- the mapping computes the right numbers (serially on the CPU) ----------------------------
@pytest.mark.parametrize("name", ["matmul", "elementwise", "softmax", "row_sum", "conv2d",
                                  "matmul_bias_relu"])
def test_default_mapping_computes_the_right_elements(ctx, name):
    text, ref = {"matmul": kernels.matmul(64, 48, 32), "elementwise": elementwise(),
                 "softmax": kernels.softmax(32, 128), "row_sum": kernels.row_sum(64, 256),
                 "conv2d": kernels.conv2d(), "matmul_bias_relu": kernels.matmul_bias_relu()}[name]
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(emulate(text, *inputs), ref(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make", [bound_matmul, shared_matmul])
def test_bound_schedules_compute_the_right_elements(ctx, make):
    sch = make()
    text, ref = kernels.matmul(*{bound_matmul: (64, 64, 32), shared_matmul: (128, 128, 64)}[make])
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(emulate(sch.mod, *inputs), ref(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_default_gpu_space_traces_build_to_ptx_and_compute(ctx, name, seed):
    text, ref = KERNELS[name]()
    sch = mlcir.Schedule(text, seed=seed)
    default_space("cuda")(sch)
    assert "bind(" in sch.trace.as_python()
    kernels_ptx = ptx(sch.mod)
    assert kernels_ptx and all(".entry" in p for p in kernels_ptx.values())
    assert ("shared" in sch.trace.as_python()) == any(".shared" in p for p in kernels_ptx.values())
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(emulate(sch.mod, *inputs), ref(*inputs), rtol=1e-3, atol=1e-4)


def test_default_gpu_space_samples_shared_memory_and_register_tiles(ctx):
    """Over a few seeds the matmul space uses shared memory and vector register tiles, and
    never more than 1024 threads (the candidates come from the extents)."""
    seen = set()
    for seed in range(8):
        sch = mlcir.Schedule(kernels.matmul(128, 128, 64)[0], seed=seed)
        default_space("cuda")(sch)
        trace = sch.trace.as_python()
        seen |= {k for k in ("shared", "vectorize", "unroll") if k in trace}
        for _, grid, block in launches(mapped(sch.mod)):
            assert block[0] * block[1] * block[2] <= 1024
    assert seen == {"shared", "vectorize", "unroll"}


def test_models_build_for_cuda_and_map_correctly(ctx):
    params = mlp.random_params(seed=0)
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    module = mlp.build_module("compiled")
    kernels_ptx = ptx(module)
    assert any(name.startswith("main_matmul") for name in kernels_ptx)
    got = emulate(module, x, params["w0"], params["b0"], params["w1"], params["b1"])
    np.testing.assert_allclose(got, mlp.reference(x, params), rtol=1e-4, atol=1e-5)


def test_onnx_cnn_builds_for_cuda_and_maps_correctly():
    from mlcir.frontend import from_onnx
    from mlcir.testing import onnx_models

    model = onnx_models.mnist_cnn()
    inputs = onnx_models.mnist_cnn_inputs()
    module = from_onnx(model)
    with module.context:
        kernels_ptx = ptx(module)
        assert any("conv" in name for name in kernels_ptx)
        got = emulate(module, *inputs.values())
    want = list(onnx_models.reference(model, inputs).values())[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_bound_weights_become_globals_inside_the_kernels(ctx):
    from mlcir.passes.bind_params import bind_params

    module = mlp.build_module("compiled")
    with module.context:
        bind_params(module, mlp.random_params(seed=0))
    lowered = mapped(module)
    globals_ = walk(lowered.operation, ("memref.get_global",))
    assert len(globals_) == 4 and all(in_launch(op) for op in globals_)  # one per weight
    kernels_ptx = ptx(module)
    weights = [name for name, text in kernels_ptx.items()
               if re.search(r"\.global \.align \d+ \.b8 __constant_\w+\[\d+\] = \{", text)]
    assert sorted(weights) == ["main_add", "main_add_1", "main_matmul", "main_matmul_1"]


def test_entry_copies_inputs_in_and_outputs_out(ctx):
    text = str(mapped(kernels.matmul(64, 64, 32)[0]))
    host = text[text.index("func.func @main("):text.index("func.func @main__device(")]
    before, after = host.split("call @main__device")
    assert before.count("gpu.alloc") == 3 and before.count("gpu.memcpy") == 2  # A, B in
    assert after.count("gpu.memcpy") == 1 and after.count("gpu.dealloc") == 3  # C out
    assert "gpu.launch" not in host


# -- errors ----------------------------------------------------------------------------------
def test_launch_limits_are_named(ctx):
    sch = mlcir.Schedule(elementwise(4, 2048)[0])
    z = sch.get_block("Z")
    i, j = sch.get_loops(z)
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    with pytest.raises(mlcir.LaunchConfigError, match=r"GPU kernel of block 'Z' in function "
                       r"'main' .*2048 threads per block \(2048 x 1 x 1\), above the limit of "
                       r"1024 threads per block"):
        mapped(sch.mod)
    assert check_sizes([1, 70000, 1], [32, 1, 128], 0) == [
        "block dim z is 128, above the limit of 64", "grid dim y is 70000, above the limit of 65535",
        "4096 threads per block (32 x 1 x 128), above the limit of 1024 threads per block"]
    assert check_sizes([1, 1, 1], [1, 1, 1], 64 * 1024) == [
        "65536 bytes of static shared memory per block, above the limit of 49152 bytes (48 KiB)"]


def test_shared_memory_limit_is_checked_before_compiling(ctx):
    # A 128 x 128 float tile of A and one of B per block: 128 KiB of shared memory.
    sch = mlcir.Schedule(kernels.matmul(256, 256, 128)[0])
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 128])
    j0, j1 = sch.split(j, [None, 128])
    sch.reorder(i0, j0, i1, j1, k)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    for index in (0, 1):
        sch.compute_at(sch.cache_read(c, index, "shared"), j0)
    with pytest.raises(mlcir.LaunchConfigError, match=r"131072 bytes of static shared memory"):
        mapped(sch.mod)


def test_unknown_arch_and_format_are_refused(ctx):
    with pytest.raises(mlcir.BuildError, match=r"unknown CUDA architecture 'sm_99'"):
        ptx(kernels.matmul(8, 8, 8)[0], "cuda -arch=sm_99")
    with pytest.raises(mlcir.BuildError, match=r"unknown -format=cubin"):
        cuda.binary_format("cuda -format=cubin")


def test_binary_format_follows_ptxas(tmp_path):
    empty = {"PATH": str(tmp_path)}
    fmt = cuda.binary_format("cuda", environ=empty, defaults=())
    assert fmt.format == "isa" and "no CUDA toolkit with ptxas found" in fmt.reason
    with pytest.raises(mlcir.BuildError, match=r"-format=bin needs ptxas from a CUDA toolkit"):
        cuda.binary_format("cuda -format=bin", environ=empty, defaults=())
    kit = tmp_path / "cuda"
    (kit / "bin").mkdir(parents=True)
    (kit / "bin" / "ptxas").write_text("#!/bin/sh\n")
    (kit / "bin" / "ptxas").chmod(0o755)
    found = cuda.binary_format("cuda", environ={"CUDA_HOME": str(kit)}, defaults=())
    assert (found.format, found.toolkit) == ("bin", str(kit.resolve()))
    assert cuda.binary_format("cuda -format=isa", environ={"CUDA_HOME": str(kit)}).format == "isa"
    with pytest.raises(mlcir.BuildError, match=r"-format=fatbin needs .*fatbinary"):
        cuda.binary_format("cuda -format=fatbin", environ={"CUDA_HOME": str(kit)}, defaults=())
    assert "format=isa" in cuda.pipeline_for("cuda -arch=sm_80 -format=isa")


def test_missing_driver_library_is_named():
    with pytest.raises(mlcir.CudaDriverError, match=r"target cuda needs the NVIDIA driver "
                       r"library libnot-a-driver\.so\.1, which was not found"):
        cuda.require_driver("libnot-a-driver.so.1")
    assert cuda.driver_problem("libnot-a-driver.so.1").summary == \
        "no CUDA driver: libnot-a-driver.so.1 not found"


@NO_GPU
def test_build_for_cuda_without_a_driver_raises_a_build_error():
    with pytest.raises(mlcir.CudaDriverError, match=r"target cuda needs the NVIDIA driver "
                       r"library libcuda\.so\.1, which was not found") as info:
        mlcir.build(kernels.matmul(8, 8, 8)[0], target="cuda -arch=sm_80")
    assert isinstance(info.value, mlcir.BuildError)


@NO_GPU
def test_host_library_builds_and_refuses_to_load_without_a_driver(ctx, tmp_path):
    module = mlcir.parse(kernels.matmul(32, 32, 32)[0])
    cuda.compile_cuda(module, "cuda -format=isa")
    path = cuda.compile_cuda_shared_object(module, tmp_path / "mm.so")
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True,
                             text=True).stdout
    assert "_mlir_ciface_main" in symbols and "_mlir_ciface_main__device" in symbols
    needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert "libmlir_cuda_runtime.so" in needed
    with pytest.raises(mlcir.CudaDriverError, match="libcuda.so.1"):
        cuda.CudaSharedObject(path)


def test_library_functions_and_cpu_parallel_loops_are_refused(ctx):
    mlp.register_library()
    with pytest.raises(mlcir.BuildError, match=r"calls 'env\.linear', a function with no body"):
        ptx(mlp.build_module("library"))
    sch = mlcir.Schedule(elementwise(8, 64)[0])
    i, _ = sch.get_loops(sch.get_block("Z"))
    sch.parallel(i)
    with pytest.raises(mlcir.BuildError, match=r"scf.forall with no GPU mapping .*bind loops "
                                               r"to blockIdx/threadIdx instead"):
        ptx(sch.mod)


def test_dynamic_shapes_are_refused(ctx):
    text = """
    func.func @main(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %0 = "graph.relu"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
      return %0 : tensor<?x8xf32>
    }"""
    with pytest.raises(mlcir.BuildError, match=r"dynamic .*the cuda target needs static shapes"):
        ptx(text)


@NO_GPU
def test_tuning_for_cuda_builds_and_records_the_missing_driver(tmp_path):
    text, _ = kernels.matmul(64, 64, 32)
    best = mlcir.tune.tune_kernel(text, target="cuda -arch=sm_80", work_dir=tmp_path,
                                  max_trials=3, strategy="random", cost_model="random",
                                  num_trials_per_iter=3, verbose=0)
    assert best is None  # nothing could be measured
    records = [json.loads(line) for line in
               (tmp_path / "database" / "records.json").read_text().splitlines()]
    assert len(records) == 3
    for record in records:
        assert record["error"] == "run: no CUDA driver: libcuda.so.1 not found"
        assert record["build_secs"] > 0 and record["features"]  # built: PTX/cubin + .so


def test_ptx_command_line_prints_each_kernel(tmp_path):
    source = tmp_path / "mm.mlir"
    source.write_text(kernels.matmul(32, 32, 32)[0])
    out = subprocess.run([sys.executable, "-m", "mlcir.runtime.cuda", str(source),
                          "--arch", "sm_80"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "// gpu.binary @main_C" in out.stdout and ".target sm_80" in out.stdout


# -- on a GPU --------------------------------------------------------------------------------
def _close(got, want, k=1):
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * max(1.0, np.sqrt(k)))


@pytest.mark.gpu
@pytest.mark.parametrize("size", [1024, 4096])
def test_gpu_matmul_matches_numpy(size):
    text, ref = kernels.matmul(size, size, size)
    a, b = kernels.random_inputs(text)
    want = ref(a.astype(np.float64), b.astype(np.float64))
    _close(mlcir.build(text, target="cuda").main(a, b), want, size)
    sch = shared_matmul(size, size, size)
    _close(mlcir.build(sch.mod, target="cuda").main(a, b), want, size)
    for seed in range(2):
        sampled = mlcir.Schedule(text, seed=seed)
        default_space("cuda")(sampled)
        _close(mlcir.build(sampled.mod, target="cuda").main(a, b), want, size)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["elementwise", "softmax"])
def test_gpu_kernels_match_numpy(name):
    text, ref = KERNELS[name]()
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(mlcir.build(text, target="cuda -arch=sm_80").main(*inputs),
                               ref(*inputs), rtol=1e-5, atol=1e-6)
    sch = mlcir.Schedule(text, seed=0)
    default_space("cuda")(sch)
    np.testing.assert_allclose(mlcir.build(sch.mod, target="cuda").main(*inputs), ref(*inputs),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_gpu_mlp_and_cnn_match_references():
    from mlcir.frontend import from_onnx
    from mlcir.testing import onnx_models

    params = mlp.random_params(seed=0)
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    ex = mlcir.build(mlp.build_module("compiled"), target="cuda")
    np.testing.assert_allclose(ex.main(x, params["w0"], params["b0"], params["w1"], params["b1"]),
                               mlp.reference(x, params), rtol=1e-4, atol=1e-5)
    model, inputs = onnx_models.mnist_cnn(), onnx_models.mnist_cnn_inputs()
    got = mlcir.build(from_onnx(model), target="cuda").main(*inputs.values())
    want = list(onnx_models.reference(model, inputs).values())[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


@pytest.mark.gpu
def test_gpu_device_timing_returns_the_same_numbers():
    text, ref = kernels.matmul(256, 256, 256)
    a, b = kernels.random_inputs(text)
    ex = mlcir.build(text, target="cuda")
    timing, (c,) = cuda.time_device(ex, "main", a, b, number=2, repeat=2)
    assert timing.median > 0
    _close(c, ref(a, b), 256)


@pytest.mark.gpu
def test_gpu_tuning_measures_candidates(tmp_path):
    text, _ = kernels.matmul(256, 256, 256)
    best = mlcir.tune.tune_kernel(text, target="cuda", work_dir=tmp_path, max_trials=6,
                                  strategy="random", cost_model="random", verbose=0)
    assert best is not None and best.latency > 0
