"""The CUDA target: PTX/cubin built without a GPU, mappings checked numerically by running the
mapped loops serially on the CPU, launch limits and missing-driver errors, models compiled into
saved files without a driver (their metadata, embedded PTX/cubin and constructors); and, marked
``gpu`` (skipped where ``mlcir.testing.hardware.cuda_available()`` is false), kernels and models
run on a GPU against numpy, built by the JIT or loaded from a saved file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import mlcir
from mlcir.passes import run_pipeline
from mlcir.passes.gpu_check_launch import check_sizes, launch_sizes
from mlcir.passes.gpu_map import default_tiling
from mlcir.passes.gpu_ir import in_launch, walk
from mlcir.passes.pipelines import cpu_bufferize, cpu_to_llvm, entry_points
from mlcir.passes.pipelines_cuda import cuda_kernels
from mlcir.paths import llvm_tool
from mlcir.runtime.model_file import read_library
from mlcir.target import Target
from mlcir.targets import cuda
from mlcir.testing import kernels, mlp, onnx_models
from mlcir.testing.hardware import cuda_available
from mlcir.tune.space import default_space

NO_GPU = pytest.mark.skipif(cuda_available(), reason="checks what happens without a GPU")
# The GPU mapping with the launches left out: mapped foralls run serially on the CPU, so the
# numbers say whether every block/thread computes the right elements (the CUDA front end, no
# Winograd transforms, without marking outputs).
EMULATE = ", ".join(entry_points() + cpu_bufferize() + [
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
        cuda.compile_cuda(work, Target.parse(target))
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
        run_pipeline(probe, ", ".join(cuda_kernels() + entry_points() + cpu_bufferize() + [
            "inline", "symbol-dce", "mlcir-gpu-map{launch=0}"]))
        assert "#gpu.thread<x>" in str(probe)  # the serial run covers mapped loops
    # Unscheduled kernels (no default CPU schedule): the GPU mapping is what is emulated.
    # The build's kernels stage with convolutions direct, as a cuda plan has them.
    return mlcir.build(work, pipeline=EMULATE, schedule="none", layout="direct").main(*inputs)


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
    return kernels.shared_memory_matmul_schedule(kernels.matmul(m, n, k)[0], tile)


def launches(module: ir.Module) -> list[tuple[str, list, list]]:
    """(kernel name, grid, block) of each gpu.launch."""
    out = []
    for launch in walk(module.operation, ("gpu.launch",)):
        grid, block = launch_sizes(launch)
        out.append((ir.FlatSymbolRefAttr(launch.attributes["function"]).value, grid, block))
    return out


# -- PTX without a GPU -----------------------------------------------------------------------
@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_unscheduled_matmul_builds_ptx_for_the_chip(arch):
    kernels_ptx = ptx(kernels.matmul(64, 64, 32)[0], f"cuda -arch={arch} -format=isa")
    assert sorted(kernels_ptx) == ["main_C", "main_C_init"]
    for name, text in kernels_ptx.items():
        assert f".target {arch}" in text
        assert re.search(rf"\.visible \.entry {name}\(", text)
        assert "%tid.x" in text and ("%ctaid.x" in text or "%ctaid.y" in text)
        assert ".maxntid" in text  # ptxas bounds the registers by the block size


@pytest.mark.usefixtures("ctx")
def test_default_mapping_puts_the_innermost_dim_on_threads_x():
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


@pytest.mark.usefixtures("ctx")
def test_threads_option_sets_the_default_block_size():
    text = elementwise(64, 256)[0]
    assert ".maxntid 256, 1, 1" in ptx(text)["main_Z"]
    assert ".maxntid 32, 1, 1" in ptx(text, "cuda -threads=32 -format=isa")["main_Z"]
    assert "threads=32" in cuda.pipeline_for(Target.parse("cuda -threads=32"))


@pytest.mark.usefixtures("ctx")
def test_bound_schedule_launches_its_grid_and_blocks():
    sch = bound_matmul()
    assert launches(mapped(sch.mod)) == [("main_C_init", [1, 16, 1], [64, 4, 1]),
                                         ("main_C", [4, 4, 1], [16, 16, 1])]
    text = ptx(sch.mod)["main_C"]
    assert "%ctaid.y" in text and "%tid.y" in text


@pytest.mark.usefixtures("ctx")
def test_shared_memory_schedule_emits_shared_ptx():
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


@pytest.mark.usefixtures("ctx")
def test_cubin_when_ptxas_is_installed():
    if cuda.find_toolkit() is None:
        pytest.skip("no CUDA toolkit with ptxas on this machine")
    module = mlcir.parse(kernels.matmul(64, 64, 32)[0])
    fmt = cuda.compile_cuda(module, Target.parse("cuda -arch=sm_80"))
    assert fmt.format == "bin" and "ptxas found" in fmt.reason
    binaries = cuda.kernel_binaries(module)
    assert sorted(binaries) == ["main_C", "main_C_init"]
    assert all(f == "bin" and data[:4] == b"\x7fELF" for f, data in binaries.values())


# -- the mapping computes the right numbers (serially on the CPU) ----------------------------
@pytest.mark.parametrize("name", ["matmul", "elementwise", "softmax", "row_sum", "conv2d",
                                  "matmul_bias_relu"])
@pytest.mark.usefixtures("ctx")
def test_default_mapping_computes_the_right_elements(name):
    text, ref = {"matmul": kernels.matmul(64, 48, 32), "elementwise": elementwise(),
                 "softmax": kernels.softmax(32, 128), "row_sum": kernels.row_sum(64, 256),
                 "conv2d": kernels.conv2d(), "matmul_bias_relu": kernels.matmul_bias_relu()}[name]
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(emulate(text, *inputs), ref(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("make", [bound_matmul, shared_matmul])
def test_bound_schedules_compute_the_right_elements(make):
    sch = make()
    text, ref = kernels.matmul(*{bound_matmul: (64, 64, 32), shared_matmul: (128, 128, 64)}[make])
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(emulate(sch.mod, *inputs), ref(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_default_gpu_space_traces_build_to_ptx_and_compute(name, seed):
    text, ref = KERNELS[name]()
    sch = mlcir.Schedule(text, seed=seed)
    default_space("cuda")(sch)
    assert "bind(" in sch.trace.as_python()
    kernels_ptx = ptx(sch.mod)
    assert kernels_ptx and all(".entry" in p for p in kernels_ptx.values())
    assert ("shared" in sch.trace.as_python()) == any(".shared" in p for p in kernels_ptx.values())
    inputs = kernels.random_inputs(text)
    np.testing.assert_allclose(emulate(sch.mod, *inputs), ref(*inputs), rtol=1e-3, atol=1e-4)


@pytest.mark.usefixtures("ctx")
def test_default_gpu_space_samples_shared_memory_and_register_tiles():
    """Over a few seeds the matmul space uses shared memory and vector register tiles, and
    never more than 1024 threads (the candidates come from the extents)."""
    seen = set()
    for seed in range(8):
        sch = mlcir.Schedule(kernels.matmul(128, 128, 64)[0], seed=seed)
        default_space("cuda")(sch)
        trace = sch.trace.as_python()
        seen |= {k for k in ("shared", "vectorize", "unroll") if k in trace}
        for _, _grid, block in launches(mapped(sch.mod)):
            assert block[0] * block[1] * block[2] <= 1024
    assert seen == {"shared", "vectorize", "unroll"}


@pytest.mark.usefixtures("ctx")
def test_models_build_for_cuda_and_map_correctly():
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


@pytest.mark.usefixtures("ctx")
def test_bound_weights_become_globals_inside_the_kernels():
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
    # The 784x128 weight is packed into panels (graph-pack-weights), the 128x10 one is not.
    assert sorted(weights) == ["main_add", "main_add_1", "main_matmul", "main_matmul_packed"]


@pytest.mark.usefixtures("ctx")
def test_entry_copies_inputs_in_and_outputs_out():
    text = str(mapped(kernels.matmul(64, 64, 32)[0]))
    host = text[text.index("func.func @main("):text.index("func.func @main__device(")]
    before, after = host.split("call @main__device")
    assert before.count("gpu.alloc") == 3 and before.count("gpu.memcpy") == 2  # A, B in
    assert after.count("gpu.memcpy") == 1 and after.count("gpu.dealloc") == 3  # C out
    assert "gpu.launch" not in host


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.usefixtures("ctx")
def test_launch_limits_are_named():
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


@pytest.mark.usefixtures("ctx")
def test_shared_memory_limit_is_checked_before_compiling():
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


@pytest.mark.usefixtures("ctx")
def test_unknown_arch_and_format_are_refused():
    with pytest.raises(mlcir.BuildError, match=r"unknown CUDA architecture 'sm_99'"):
        ptx(kernels.matmul(8, 8, 8)[0], "cuda -arch=sm_99")
    with pytest.raises(mlcir.BuildError, match=r"unknown -format=cubin"):
        cuda.binary_format(Target.parse("cuda -format=cubin"))


def test_binary_format_follows_ptxas(tmp_path):
    empty = {"PATH": str(tmp_path)}
    fmt = cuda.binary_format(Target.parse("cuda"), environ=empty, defaults=())
    assert fmt.format == "isa" and "no CUDA toolkit with ptxas found" in fmt.reason
    with pytest.raises(mlcir.BuildError, match=r"-format=bin needs ptxas from a CUDA toolkit"):
        cuda.binary_format(Target.parse("cuda -format=bin"), environ=empty, defaults=())
    kit = tmp_path / "cuda"
    (kit / "bin").mkdir(parents=True)
    (kit / "bin" / "ptxas").write_text("#!/bin/sh\n")
    (kit / "bin" / "ptxas").chmod(0o755)
    found = cuda.binary_format(Target.parse("cuda"), environ={"CUDA_HOME": str(kit)}, defaults=())
    assert (found.format, found.toolkit) == ("bin", str(kit.resolve()))
    assert cuda.binary_format(Target.parse("cuda -format=isa"), environ={"CUDA_HOME": str(kit)}).format == "isa"
    with pytest.raises(mlcir.BuildError, match=r"-format=fatbin needs .*fatbinary"):
        cuda.binary_format(Target.parse("cuda -format=fatbin"), environ={"CUDA_HOME": str(kit)}, defaults=())
    assert "format=isa" in cuda.pipeline_for(Target.parse("cuda -arch=sm_80 -format=isa"))


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


@pytest.mark.usefixtures("ctx")
@NO_GPU
def test_host_library_builds_and_refuses_to_load_without_a_driver(tmp_path):
    module = mlcir.parse(kernels.matmul(32, 32, 32)[0])
    cuda.compile_cuda(module, Target.parse("cuda -format=isa"))
    path = cuda.compile_cuda_shared_object(module, tmp_path / "mm.so")
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True,
                             text=True).stdout
    assert "_mlir_ciface_main" in symbols and "_mlir_ciface_main__device" in symbols
    needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert "libmlir_cuda_runtime.so" in needed
    with pytest.raises(mlcir.CudaDriverError, match="libcuda.so.1"):
        cuda.CudaSharedObject(path)


@pytest.mark.usefixtures("ctx")
def test_library_functions_and_cpu_parallel_loops_are_refused():
    mlp.register_library()
    with pytest.raises(mlcir.BuildError, match=r"calls 'env\.linear', a function with no body"):
        ptx(mlp.build_module("library"))
    sch = mlcir.Schedule(elementwise(8, 64)[0])
    i, _ = sch.get_loops(sch.get_block("Z"))
    sch.parallel(i)
    with pytest.raises(mlcir.BuildError, match=r"scf.forall with no GPU mapping .*bind loops "
                                               r"to blockIdx/threadIdx instead"):
        ptx(sch.mod)


@pytest.mark.usefixtures("ctx")
def test_dynamic_shapes_are_refused():
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
    out = subprocess.run([sys.executable, "-m", "mlcir.targets.cuda", str(source),
                          "--arch", "sm_80"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "// gpu.binary @main_C" in out.stdout and ".target sm_80" in out.stdout


# -- saved models compiled without a driver --------------------------------------------------
SAVED_KERNELS = {
    "matmul": lambda: kernels.matmul(64, 48, 32),
    "elementwise": elementwise,
    "softmax": lambda: kernels.softmax(32, 128),
}


def _tool(name: str, *args) -> str:
    result = subprocess.run([llvm_tool(name), *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def constructors(library) -> set[str]:
    """The functions the library's ``.init_array`` points at: what runs when it is loaded.
    (The entries of a position-independent library are ``*_RELATIVE`` relocations whose addend
    is the function's address.)"""
    sections = _tool("llvm-readelf", "-S", "-W", library)
    start, size = (int(v, 16) for v in re.search(
        r"\.init_array\s+INIT_ARRAY\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", sections).groups())
    targets = set()
    for line in _tool("llvm-readelf", "-r", "-W", library).splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2].endswith("_RELATIVE") and \
                start <= int(fields[0], 16) < start + size:
            targets.add(int(fields[-1], 16))
    names = {}
    for line in _tool("llvm-nm", "--defined-only", library).splitlines():
        address, kind, name = line.split()
        if kind in "tT":
            names[int(address, 16)] = name
    return {names.get(address, hex(address)) for address in targets}


def check_saved_library(path, meta: dict, library: bytes) -> dict[str, bytes]:
    """The library of a saved cuda model: its kernels' binaries are embedded (as in the
    metadata), each one's module is loaded by a constructor, the CUDA runtime is needed.
    Returns each kernel's embedded binary by name."""
    info = meta["cuda"]
    embedded = cuda.embedded_kernels(library, [k["symbol"] for k in info["kernels"]])
    binaries = {}
    for kernel in info["kernels"]:
        data = embedded[kernel["symbol"]]
        if kernel["format"] == "isa":
            assert data.endswith(b"\0")  # PTX is handed to the driver as a C string
            data = data[:-1]
        assert (len(data), hashlib.sha256(data).hexdigest()) == (kernel["bytes"], kernel["sha256"])
        binaries[kernel["name"]] = data
    so = path.with_suffix(".so")
    so.write_bytes(library)
    assert {f"{k['name']}_load" for k in info["kernels"]} <= constructors(so)
    undefined = _tool("llvm-nm", "-u", so).split()
    loader = "mgpuModuleLoadJIT" if info["binary_format"] == "isa" else "mgpuModuleLoad"
    assert loader in undefined and "mgpuLaunchKernel" in undefined
    assert "[libmlir_cuda_runtime.so]" in _tool("llvm-readelf", "-d", so)
    return binaries


@pytest.mark.usefixtures("ctx")
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", sorted(SAVED_KERNELS))
def test_kernels_compile_into_a_saved_model_without_a_driver(tmp_path, name, arch):
    text, ref = SAVED_KERNELS[name]()
    target = f"cuda -arch={arch} -format=isa"
    saved = mlcir.compile(text, target, tmp_path / f"{name}.mlcir")
    meta, library = read_library(saved.path)
    assert meta == json.loads(json.dumps(saved.metadata)) and saved.target == target
    assert meta["target"] == target and meta["cpu_features"] == []  # llc: the generic CPU
    inputs = kernels.random_inputs(text)
    (main,) = meta["functions"]
    assert [(a["shape"], a["dtype"], a["kind"]) for a in main["args"]] == \
        [(list(x.shape), "float32", "input") for x in inputs]
    assert [(r["shape"], r["dtype"]) for r in main["results"]] == \
        [(list(ref(*inputs).shape), "float32")]
    assert meta["cuda"]["arch"] == arch and meta["cuda"]["binary_format"] == "isa"
    binaries = check_saved_library(saved.path, meta, library)
    # The embedded PTX is the PTX of the kernels, byte for byte.
    assert {n: b.decode() for n, b in binaries.items()} == ptx(text, target)
    for kernel, text_ in binaries.items():
        assert f".target {arch}".encode() in text_
        assert re.search(rf"\.visible \.entry {kernel}\(".encode(), text_)
    if not cuda_available():
        with pytest.raises(mlcir.CudaDriverError, match=rf"{name}\.mlcir: the model is compiled "
                           rf"for '{target}' and needs the NVIDIA driver library libcuda\.so\.1, "
                           "which was not found"):
            mlcir.load(saved.path)


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_onnx_mlp_compiles_into_a_saved_model_without_a_driver(tmp_path, arch):
    from mlcir.frontend import from_onnx

    saved = mlcir.compile(from_onnx(onnx_models.mlp()), f"cuda -arch={arch}",
                          tmp_path / "mlp.mlcir")
    meta, library = read_library(saved.path)
    assert meta["functions"] == [{
        "name": "main",
        "args": [{"name": "x", "shape": [1, 784], "dtype": "float32", "kind": "input"}],
        "results": [{"name": "logits", "shape": [1, 10], "dtype": "float32", "kind": "output"}]}]
    fmt = cuda.binary_format(Target.parse(f"cuda -arch={arch}")).format  # cubin when ptxas is installed
    assert meta["target"] == f"cuda -arch={arch}" and meta["cuda"]["binary_format"] == fmt
    binaries = check_saved_library(saved.path, meta, library)
    assert any(name.startswith("main_matmul") for name in binaries)
    for data in binaries.values():
        if fmt == "bin":
            assert data[:4] == b"\x7fELF"
        else:
            assert f".target {arch}".encode() in data
    if not cuda_available():
        with pytest.raises(mlcir.CudaDriverError, match=r"libcuda\.so\.1"):
            mlcir.load(saved.path)


def test_cubin_model_embeds_elf_kernels_for_the_chip(tmp_path):
    if cuda.find_toolkit() is None:
        pytest.skip("no CUDA toolkit with ptxas on this machine")
    saved = mlcir.compile(kernels.matmul(64, 64, 32)[0], "cuda -arch=sm_80 -format=bin",
                          tmp_path / "mm.mlcir")
    meta, library = read_library(saved.path)
    assert meta["cuda"]["binary_format"] == "bin"
    binaries = check_saved_library(saved.path, meta, library)
    assert sorted(binaries) == ["main_C", "main_C_init"]
    for data in binaries.values():
        assert data[:4] == b"\x7fELF" and data[18:20] == (190).to_bytes(2, "little")  # EM_CUDA


@pytest.mark.usefixtures("ctx")
def test_a_jit_built_cuda_executable_saves_its_lowered_module(tmp_path):
    """What ``mlcir.build(..., target="cuda")`` returns on a GPU machine (an engine and the
    lowered module) saves through the same library; the engine is not needed for it."""
    from mlcir.runtime import Executable
    from mlcir.runtime.compile import as_module, prepare

    text, _ = kernels.matmul(32, 32, 32)
    work, sigs, *_ = prepare(as_module(text))
    cuda.compile_cuda(work, Target.parse("cuda -arch=sm_80 -format=isa"))
    Executable(sigs, None, Target.parse("cuda -arch=sm_80 -format=isa"), lowered=work).save(
        tmp_path / "jit.mlcir")
    meta, library = read_library(tmp_path / "jit.mlcir")
    assert [f["name"] for f in meta["functions"]] == ["main"]
    assert {n: b.decode() for n, b in check_saved_library(tmp_path / "jit.mlcir", meta,
                                                          library).items()} == \
        ptx(text, "cuda -arch=sm_80 -format=isa")
    with pytest.raises(mlcir.BuildError, match="holds no lowered module to save"):
        Executable(sigs, None, Target.parse("cuda")).save(tmp_path / "never.mlcir")
    assert not (tmp_path / "never.mlcir").exists()


def test_compiling_for_cuda_refuses_library_functions_before_writing(tmp_path):
    mlp.register_library()
    with pytest.raises(mlcir.BuildError, match=r"env\.linear"):
        mlcir.compile(mlp.build_module("library"), "cuda", tmp_path / "lib.mlcir")
    assert not (tmp_path / "lib.mlcir").exists()


def test_device_compatibility_rules():
    assert cuda.chip_capability("sm_86") == (8, 6, False)
    assert cuda.chip_capability("sm_121a") == (12, 1, True)
    # PTX: the driver compiles it for any GPU as new or newer.
    assert cuda.device_problem("sm_80", "isa", (8, 0)) is None
    assert cuda.device_problem("sm_80", "isa", (9, 0)) is None
    assert cuda.device_problem("sm_80", "fatbin", (12, 0)) is None
    assert "newer than this GPU; this GPU is sm_75 (compute capability 7.5): recompile with " \
        "-arch=sm_75" in cuda.device_problem("sm_80", "isa", (7, 5))
    # cubin: the same major version, a minor one as new or newer.
    assert cuda.device_problem("sm_80", "bin", (8, 6)) is None
    assert "cubin for sm_80, which runs only on sm_8x GPUs" in cuda.device_problem(
        "sm_80", "bin", (9, 0))
    assert "cubin for sm_86" in cuda.device_problem("sm_86", "bin", (8, 0))
    # Arch-specific chips: exactly that one.
    assert cuda.device_problem("sm_90a", "bin", (9, 0)) is None
    assert "run only on that architecture; this GPU is sm_100" in cuda.device_problem(
        "sm_90a", "isa", (10, 0))
    with pytest.raises(mlcir.BuildError, match="not a CUDA architecture: 'gfx90a'"):
        cuda.chip_capability("gfx90a")


def test_embedded_kernels_names_what_is_missing(tmp_path):
    with pytest.raises(mlcir.BuildError, match="not a 64-bit little-endian ELF"):
        cuda.embedded_kernels(b"PK\x03\x04 not a library", ["main_C_binary"])
    saved = mlcir.compile(kernels.matmul(16, 16, 16)[0], "cuda -arch=sm_80 -format=isa",
                          tmp_path / "mm.mlcir")
    _, library = read_library(saved.path)
    with pytest.raises(mlcir.BuildError, match="the library has no symbol main_D_binary"):
        cuda.embedded_kernels(library, ["main_C_binary", "main_D_binary"])


def test_ptx_command_line_prints_a_saved_models_kernels(tmp_path):
    saved = mlcir.compile(kernels.matmul(32, 32, 32)[0], "cuda -arch=sm_80 -format=isa",
                          tmp_path / "mm.mlcir")
    out = subprocess.run([sys.executable, "-m", "mlcir.targets.cuda", str(saved.path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.findall(r"^// gpu.binary @(\w+) \(isa, \d+ bytes\)$", out.stdout, re.M) == \
        ["main_C_init", "main_C"]
    assert out.stdout.count(".target sm_80") == 2
    cpu = mlcir.compile(kernels.matmul(8, 8, 8)[0], "llvm", tmp_path / "cpu.mlcir")
    out = subprocess.run([sys.executable, "-m", "mlcir.targets.cuda", str(cpu.path)],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "cpu.mlcir: not a model compiled for cuda (target 'llvm')" in out.stderr


# -- a saved model through the CUDA runtime, on a recording driver ---------------------------
# tests/fake_cuda/libcuda.c stands in for libcuda.so.1 (found first through LD_LIBRARY_PATH in
# a child process): it records what the model asks of the driver and computes nothing, so these
# tests check the loading path — driver and device checks, the runtime found in the wheel, the
# constructors loading the kernels, the launches and copies of the host code — not the kernels'
# results (the tests marked gpu do, on a GPU).
GRAPH_MODEL = """
func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %w: tensor<8x16xf32> {graph.name = "w"})
    -> (tensor<4x16xf32> {graph.name = "y"}) {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}"""


@pytest.fixture(scope="module")
def recording_driver(tmp_path_factory) -> Path:
    from mlcir.runtime.aot import compiler

    folder = tmp_path_factory.mktemp("recording_driver")
    source = Path(__file__).with_name("fake_cuda") / "libcuda.c"
    subprocess.run([compiler(), "-shared", "-fPIC", "-O1", "-o", str(folder / "libcuda.so.1"),
                    str(source)], check=True)
    return folder


def with_driver(folder: Path, command: list, capability: str = "8.0"):
    """Run ``command`` with the recording driver as libcuda.so.1; returns the process and the
    driver's records."""
    log = folder / "log"
    log.unlink(missing_ok=True)
    env = dict(os.environ, MLCIR_FAKE_CUDA_LOG=str(log), MLCIR_FAKE_CUDA_CC=capability,
               LD_LIBRARY_PATH=os.pathsep.join([str(folder),
                                                os.environ.get("LD_LIBRARY_PATH", "")]))
    result = subprocess.run([str(c) for c in command], env=env, capture_output=True, text=True)
    return result, (log.read_text().splitlines() if log.exists() else [])


def fnv1a(data: bytes) -> str:
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) % 2 ** 64
    return f"{h:016x}"


RUN_SAVED = """
import sys, numpy as np, mlcir
model = mlcir.load(sys.argv[1])
with open(sys.argv[2], "a") as log:
    log.write("call main\\n")
x = np.arange(32, dtype=np.float32).reshape(4, 8)
w = np.full((8, 16), 2, np.float32)
np.save(sys.argv[3], model.main(x, w))
"""


@pytest.mark.usefixtures("ctx")
def test_saved_model_drives_the_cuda_runtime_as_compiled(tmp_path, recording_driver):
    path = mlcir.compile(GRAPH_MODEL, "cuda -arch=sm_80 -format=isa", tmp_path / "m.mlcir").path
    result, log = with_driver(recording_driver, [sys.executable, "-c", RUN_SAVED, path,
                                                  recording_driver / "log", tmp_path / "y.npy"])
    assert result.returncode == 0, result.stderr
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    w = np.full((8, 16), 2, np.float32)
    # Loading the library loaded every kernel module (its constructors), before any call.
    kernels_ = launches(mapped(GRAPH_MODEL))
    assert log[:len(kernels_)] == ["load ptx .target sm_80"] * len(kernels_)
    # main: the inputs copied in, the kernels launched as mapped, the output copied back.
    assert log[len(kernels_):] == (
        ["call main", f"copy {x.nbytes} {fnv1a(x.tobytes())}",
         f"copy {w.nbytes} {fnv1a(w.tobytes())}"]
        + [f"launch {name} grid {' '.join(map(str, grid))} block {' '.join(map(str, block))}"
           for name, grid, block in kernels_]
        + [f"copy {4 * 16 * 4} {fnv1a(np.ones((4, 16), np.float32).tobytes())}"])
    # The device's output buffer (1.0 from the recording driver: no kernel ran) reached numpy.
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.ones((4, 16), np.float32))
    # The command line runs it the same way.
    result, log = with_driver(recording_driver, [Path(sys.executable).with_name("mlcir"), "run",
                                                  path, "--fill-mode", "ones"])
    assert result.returncode == 0, result.stderr
    assert "y: float32[4, 16]  min 1  max 1  mean 1" in result.stdout
    assert sum(line.startswith("launch ") for line in log) == len(kernels_)


def test_saved_model_for_another_gpu_is_refused_before_loading(tmp_path, recording_driver):
    """The compute capability is checked before the library (and its constructors) load."""
    load = "import sys, mlcir; mlcir.load(sys.argv[1])"
    ptx80 = mlcir.compile(GRAPH_MODEL, "cuda -arch=sm_80 -format=isa", tmp_path / "p.mlcir").path
    result, log = with_driver(recording_driver, [sys.executable, "-c", load, ptx80], "7.5")
    assert result.returncode == 1 and log == []
    assert ("mlcir.errors.LoadError: " + str(ptx80) + ": the kernels are compiled for sm_80, "
            "newer than this GPU; this GPU is sm_75 (compute capability 7.5): recompile with "
            "-arch=sm_75") in result.stderr
    result, log = with_driver(recording_driver, [sys.executable, "-c", load, ptx80], "9.0")
    assert result.returncode == 0, result.stderr  # PTX is compiled by the driver for sm_90
    assert log == ["load ptx .target sm_80"] * 3
    if cuda.find_toolkit() is None:
        return
    cubin80 = mlcir.compile(GRAPH_MODEL, "cuda -arch=sm_80 -format=bin", tmp_path / "c.mlcir").path
    result, log = with_driver(recording_driver, [sys.executable, "-c", load, cubin80], "9.0")
    assert result.returncode == 1 and log == []
    assert "the kernels are cubin for sm_80, which runs only on sm_8x GPUs" in result.stderr
    result, log = with_driver(recording_driver, [sys.executable, "-c", load, cubin80], "8.6")
    assert result.returncode == 0 and log == ["load cubin"] * 3, result.stderr


JIT_THEN_SAVED = """
import sys, numpy as np, mlcir
from mlcir.testing import kernels
text, _ = kernels.matmul(16, 16, 16)
inputs = kernels.random_inputs(text)
built = mlcir.build(text, target="cuda -arch=sm_80 -format=isa")
built.main(*inputs)
built.save(sys.argv[1])
with open(sys.argv[2], "a") as log:
    log.write("saved\\n")
mlcir.load(sys.argv[1]).main(*inputs)
try:
    mlcir.build(text, target="cuda -arch=sm_90 -format=isa")
except mlcir.BuildError as error:
    print(error)
"""


def test_jit_build_and_its_saved_file_drive_the_runtime_alike(tmp_path, recording_driver):
    """``mlcir.build(..., target="cuda")`` (the JIT) and the file its ``save`` writes load the
    same kernels and make the same launches and copies; the JIT checks the GPU too."""
    result, log = with_driver(recording_driver, [sys.executable, "-c", JIT_THEN_SAVED,
                                                  tmp_path / "jit.mlcir", recording_driver / "log"])
    assert result.returncode == 0, result.stderr
    jit, saved = log[:log.index("saved")], log[log.index("saved") + 1:]
    assert jit == saved and jit[:2] == ["load ptx .target sm_80"] * 2
    launched = [line.split()[1] for line in jit if line.startswith("launch")]
    assert launched == ["main_C_init", "main_C"]
    assert "target 'cuda -arch=sm_90 -format=isa': the kernels are compiled for sm_90, newer " \
        "than this GPU; this GPU is sm_80" in result.stdout


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


def device_arch() -> str:
    major, minor = cuda.device_capability()
    return f"sm_{major}{minor}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(SAVED_KERNELS))
def test_gpu_saved_kernels_load_and_match_numpy(tmp_path, name):
    """Compiled into a file (PTX for sm_80; the default format for this GPU's chip), loaded,
    run: the numbers of numpy; saved again, the same library."""
    text, ref = SAVED_KERNELS[name]()
    inputs = kernels.random_inputs(text)
    for i, target in enumerate(("cuda -arch=sm_80 -format=isa", f"cuda -arch={device_arch()}")):
        path = mlcir.compile(text, target, tmp_path / f"{name}{i}.mlcir").path
        loaded = mlcir.load(path)
        np.testing.assert_allclose(loaded.main(*inputs), ref(*inputs), rtol=1e-5, atol=1e-5)
        loaded.save(tmp_path / "again.mlcir")
        assert read_library(tmp_path / "again.mlcir")[1] == read_library(path)[1]
        np.testing.assert_allclose(mlcir.load(tmp_path / "again.mlcir").main(*inputs),
                                   ref(*inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_gpu_saved_onnx_mlp_matches_onnxruntime_in_another_process(tmp_path):
    from mlcir.frontend import from_onnx

    model = onnx_models.mlp()
    mlcir.compile(from_onnx(model), f"cuda -arch={device_arch()}", tmp_path / "mlp.mlcir")
    inputs = onnx_models.mlp_inputs(seed=2)
    np.savez(tmp_path / "in.npz", **inputs)
    script = ("import sys, numpy as np, mlcir; m = mlcir.load(sys.argv[1]); "
              "np.save(sys.argv[3], m.main.run(dict(np.load(sys.argv[2])))['logits'])")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "mlp.mlcir"),
                          str(tmp_path / "in.npz"), str(tmp_path / "out.npy")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    want = onnx_models.reference(model, inputs)["logits"]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_gpu_saved_model_times_its_kernels_alone(tmp_path):
    text, ref = kernels.matmul(256, 256, 256)
    a, b = kernels.random_inputs(text)
    path = mlcir.compile(text, f"cuda -arch={device_arch()}", tmp_path / "mm.mlcir").path
    loaded = mlcir.load(path)
    timing, (c,) = cuda.time_device(loaded, "main", a, b, number=2, repeat=2)
    assert timing.median > 0
    _close(c, ref(a, b), 256)


@pytest.mark.gpu
def test_gpu_refuses_a_cubin_for_another_chip(tmp_path):
    if cuda.find_toolkit() is None:
        pytest.skip("no CUDA toolkit with ptxas on this machine")
    other = "sm_80" if cuda.device_capability()[0] != 8 else "sm_90"
    path = mlcir.compile(kernels.matmul(16, 16, 16)[0], f"cuda -arch={other} -format=bin",
                         tmp_path / "other.mlcir").path
    with pytest.raises(mlcir.LoadError, match=rf"other\.mlcir: the kernels are cubin for {other}"):
        mlcir.load(path)
