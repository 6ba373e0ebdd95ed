// RUN: %PYTHON -c "import numpy as np; np.savez('%t.npz', w=np.arange(6, dtype=np.float32).reshape(2, 3))"
// RUN: mlcir-opt %s --graph-bind-params="file=%t.npz" | FileCheck %s
// RUN: not mlcir-opt %s --graph-bind-params="file=%t.npz func=nope" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not mlcir-opt %s --graph-bind-params="fil=%t.npz" 2>&1 | FileCheck %s --check-prefix=OPT

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x2xf32> {graph.name = "x"}) -> tensor<1x3xf32>
// CHECK: %[[W:.*]] = arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00, 5.000000e+00]]> : tensor<2x3xf32>
// CHECK: "graph.matmul"(%[[X]], %[[W]])
// ERR: mlcir-opt: error: graph-bind-params: no function 'nope'
// OPT: mlcir-opt: error: pass 'graph-bind-params' has no option 'fil' (options: file, func)
func.func @main(%x: tensor<1x2xf32> {graph.name = "x"}, %w: tensor<2x3xf32> {graph.name = "w"}) -> tensor<1x3xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
