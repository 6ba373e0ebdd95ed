// A saved cuda model runs on a GPU: PTX for sm_80 (compiled by the driver for the GPU it finds)
// and the default format, compiled into a file, loaded by `mlcir run` in another process.
// y = relu(x @ w) with x = ones(4x8) and w = ones(8x16): every element is 8.
// REQUIRES: cuda
// RUN: mlcir compile %s --target "cuda -arch=sm_80 -format=isa" -o %t.ptx.mlcir -q
// RUN: mlcir run %t.ptx.mlcir --fill-mode ones --print-top 2 | FileCheck %s
// RUN: %PYTHON -c "from mlcir.targets import cuda; print('sm_' + ''.join(map(str, cuda.device_capability())))" > %t.arch
// RUN: %PYTHON -c "import sys, mlcir; arch = open(sys.argv[1]).read().strip(); mlcir.compile(open(sys.argv[2]).read(), 'cuda -arch=' + arch, sys.argv[3])" %t.arch %s %t.native.mlcir
// RUN: mlcir run %t.native.mlcir --fill-mode ones --print-top 2 | FileCheck %s

// CHECK: y: float32[4, 16]  min 8  max 8  mean 8
// CHECK-NOT: error

func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}, %w: tensor<8x16xf32> {graph.name = "w"}) -> (tensor<4x16xf32> {graph.name = "y"}) {
  %0 = "graph.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
