// `mlcir compile --target cuda` needs no GPU: the loop-level kernels and the LLVM dialect it
// compiles, the PTX embedded in the saved model's library (read back by
// `python -m mlcir.targets.cuda`), and the library's symbols: the host functions, one
// constructor per kernel module that loads its PTX into the driver, the CUDA runtime needed.
// RUN: mlcir compile %s --target "cuda -arch=sm_80 -format=isa" -o %t.mlcir -q --dump-mlir kernels %t.kernels.mlir --dump-mlir llvm %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=KERNELS --input-file=%t.kernels.mlir
// RUN: FileCheck %s --check-prefix=LLVM --input-file=%t.llvm.mlir
// RUN: %PYTHON -m mlcir.targets.cuda %t.mlcir | FileCheck %s --check-prefix=PTX
// RUN: %PYTHON -c "import sys, zipfile; open(sys.argv[2], 'wb').write(zipfile.ZipFile(sys.argv[1]).read('model.so'))" %t.mlcir %t.so
// RUN: llvm-nm %t.so | FileCheck %s --check-prefix=SYMS
// RUN: llvm-readelf -d %t.so | FileCheck %s --check-prefix=DYN

// KERNELS: func.func @main(%{{.*}}: tensor<4x8xf32> {graph.name = "x"}
// KERNELS: call @fused_matmul_relu(
// KERNELS: func.func private @fused_matmul_relu({{.*}} attributes {{{.*}}loop.kernel}
// KERNELS: linalg.matmul {loop.block = "matmul"
// KERNELS: loop.block = "relu"

// LLVM: module attributes {gpu.container_module{{.*}}}
// LLVM-LABEL: llvm.func @main(
// LLVM: llvm.call @mgpuMemAlloc
// LLVM: llvm.call @mgpuMemcpy
// LLVM: llvm.call @main__device(
// LLVM-LABEL: llvm.func @_mlir_ciface_main(
// LLVM-LABEL: llvm.func @main__device(
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_matmul_init::@main_matmul_init blocks in
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_matmul::@main_matmul blocks in
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_relu::@main_relu blocks in
// LLVM-DAG: gpu.binary @main_matmul_init  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">
// LLVM-DAG: gpu.binary @main_matmul  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">
// LLVM-DAG: gpu.binary @main_relu  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">

// PTX-LABEL: // gpu.binary @main_matmul_init (isa, {{[0-9]+}} bytes)
// PTX: .target sm_80
// PTX: .visible .entry main_matmul_init(
// PTX-LABEL: // gpu.binary @main_matmul (isa, {{[0-9]+}} bytes)
// PTX: .target sm_80
// PTX: .visible .entry main_matmul(
// PTX: .maxntid 16, 4, 1
// PTX: ld.global.b32
// PTX: mul.rn.f32
// PTX: add.rn.f32
// PTX-LABEL: // gpu.binary @main_relu (isa, {{[0-9]+}} bytes)
// PTX: .target sm_80
// PTX: .visible .entry main_relu(
// PTX: max.NaN.f32

// SYMS-DAG: T _mlir_ciface_main{{$}}
// SYMS-DAG: T _mlir_ciface_main__device{{$}}
// SYMS-DAG: r main_matmul_binary
// SYMS-DAG: t main_matmul_load
// SYMS-DAG: r main_matmul_init_binary
// SYMS-DAG: t main_matmul_init_load
// SYMS-DAG: r main_relu_binary
// SYMS-DAG: t main_relu_load
// SYMS-DAG: U mgpuModuleLoadJIT
// SYMS-DAG: U mgpuLaunchKernel

// DYN: (NEEDED) Shared library: [libmlir_cuda_runtime.so]
// DYN-NOT: libcuda
// DYN: (SYMBOLIC)
// DYN: (INIT_ARRAY)

func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %w: tensor<8x16xf32> {graph.name = "w"}) -> (tensor<4x16xf32> {graph.name = "y"}) {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
