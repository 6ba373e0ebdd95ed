// Compile here, run there: `mlcir compile --target cuda` succeeds on a machine without the
// NVIDIA driver; `mlcir run` of the saved model then stops with one line naming libcuda.so.1
// (on a GPU machine it runs: saved-model-on-gpu.mlir).
// UNSUPPORTED: cuda
// RUN: mlcir compile %s --target "cuda -arch=sm_80" -o %t.mlcir 2>&1 | FileCheck %s --check-prefix=COMPILE
// RUN: not mlcir run %t.mlcir --fill-mode ones 2>&1 | FileCheck %s --check-prefix=NODRIVER

// COMPILE: mlcir: compiled {{.*}}saved-model-without-driver.mlir for 'cuda -arch=sm_80' ({{PTX|cubin}} for sm_80; it runs on a machine with an NVIDIA GPU and its driver) into {{.*}}.mlcir: <mlcir.Function main(x: float32[4, 8], w: float32[8, 16]) -> (float32[4, 16])>

// NODRIVER: mlcir: error: {{.*}}.mlcir: the model is compiled for 'cuda -arch=sm_80' and needs the NVIDIA driver library libcuda.so.1, which was not found ({{.*}}). Running it needs an NVIDIA GPU and its driver: copy the file to a machine with one (docs/cuda.md)
// NODRIVER-NOT: Traceback

func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %w: tensor<8x16xf32> {graph.name = "w"}) -> (tensor<4x16xf32> {graph.name = "y"}) {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
