// The CPU pipeline takes a graph module to the LLVM dialect: ops are fused into one kernel
// (graph-fuse-ops), which is destination-passing like a per-op kernel, so the caller's output
// array is the kernel's destination (no temporary, no copy); the entry keeps a C interface,
// kernels become llvm.func, intermediates are freed.
// RUN: mlcir-opt %s --mlcir-cpu | FileCheck %s
// RUN: mlcir-opt %s --mlcir-cpu-bufferize | FileCheck %s --check-prefix=BUF

// BUF-LABEL: func.func @main
// BUF-SAME: (%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<8x16xf32>, %[[OUT:.*]]: memref<4x16xf32>) attributes {llvm.emit_c_interface}
// BUF-NEXT: call @fused_matmul_relu(%{{.*}}, %{{.*}}, %[[OUT]])
// BUF-NEXT: return
// BUF-LABEL: func.func private @fused_matmul_relu
// BUF-SAME: (%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<8x16xf32>, %[[KOUT:.*]]: memref<4x16xf32>)
// BUF: %[[MM:.*]] = memref.alloc(){{.*}} : memref<4x16xf32>
// BUF: linalg.matmul {loop.block = "matmul"{{.*}}} ins({{.*}} : memref<4x8xf32>, memref<8x16xf32>) outs(%[[MM]] : memref<4x16xf32>)
// BUF: linalg.generic {{.*}} ins(%[[MM]] : memref<4x16xf32>) outs(%[[KOUT]] : memref<4x16xf32>)
// BUF: memref.dealloc %[[MM]]

// CHECK-LABEL: llvm.func @main
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: llvm.call @mlcir.fused_matmul_relu
// CHECK-LABEL: llvm.func @_mlir_ciface_main
// CHECK-LABEL: llvm.func @mlcir.fused_matmul_relu
// CHECK: llvm.fmul
// CHECK: llvm.fadd
// CHECK: llvm.call @free
// CHECK-NOT: linalg.
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "graph.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
