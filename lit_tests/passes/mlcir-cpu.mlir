// The CPU pipeline takes a graph module to the LLVM dialect: results become out-parameters,
// the entry keeps a C interface, kernels become llvm.func, intermediates are freed.
// RUN: mlcir-opt %s --mlcir-cpu | FileCheck %s
// RUN: mlcir-opt %s --mlcir-cpu-bufferize | FileCheck %s --check-prefix=BUF

// BUF-LABEL: func.func @main
// BUF-SAME: (%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<8x16xf32>, %[[OUT:.*]]: memref<4x16xf32>) attributes {llvm.emit_c_interface}
// BUF: %[[TMP:.*]] = memref.alloc() {{.*}} : memref<4x16xf32>
// BUF: call @matmul(%{{.*}}, %{{.*}}, %[[TMP]])
// BUF: call @relu(%[[TMP]], %[[OUT]])
// BUF: memref.dealloc %[[TMP]]
// BUF-LABEL: func.func private @matmul
// BUF: linalg.matmul {loop.block = "matmul"{{.*}}} ins({{.*}} : memref<4x8xf32>, memref<8x16xf32>) outs({{.*}} : memref<4x16xf32>)

// CHECK-LABEL: llvm.func @main
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: llvm.call @matmul
// CHECK: llvm.call @relu
// CHECK: llvm.call @free
// CHECK-LABEL: llvm.func @_mlir_ciface_main
// CHECK-LABEL: llvm.func @matmul
// CHECK: llvm.fmul
// CHECK: llvm.fadd
// CHECK-NOT: linalg.
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
