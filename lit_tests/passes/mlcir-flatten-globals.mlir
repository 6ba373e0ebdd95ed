// mlcir-flatten-globals: a constant global of rank >= 2 held in a resource blob becomes
// one-dimensional (LLVM then translates it as one constant, not one per innermost row), and
// each read views it in its shape again; small dense globals, rank-1 globals and mutable
// globals stay as they are.
// RUN: mlcir-opt %s --mlcir-flatten-globals | FileCheck %s
// RUN: mlcir-opt %s --mlcir-flatten-globals --finalize-memref-to-llvm | FileCheck %s --check-prefix=LLVM

// (@w's 8 elements are few enough to be held inline once read from the blob.)
// CHECK-DAG: memref.global "private" constant @w : memref<8xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, {{.*}}, 8.000000e+00]> {alignment = 64 : i64}
// CHECK-DAG: memref.global "private" constant @b : memref<2xf32> = dense_resource<b_blob{{.*}}>
// CHECK-DAG: memref.global "private" constant @small : memref<2x1xf32> = dense<{{\[}}[1.000000e+00], [2.000000e+00]]>
// CHECK-DAG: memref.global "private" @state : memref<2x1xf32> = dense_resource<state_blob{{.*}}>
// CHECK-LABEL: func.func @main
// CHECK: %[[FLAT:.*]] = memref.get_global @w : memref<8xf32>
// CHECK-NEXT: %[[W:.*]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1, 2, 3]] output_shape [2, 4, 1, 1] : memref<8xf32> into memref<2x4x1x1xf32>
// CHECK: memref.get_global @b : memref<2xf32>
// CHECK: memref.get_global @small : memref<2x1xf32>
// CHECK: memref.copy %[[W]], %arg0

// LLVM: llvm.mlir.global private constant @w(dense<{{.*}}> : tensor<8xf32>) {{.*}} : !llvm.array<8 x f32>

memref.global "private" constant @w : memref<2x4x1x1xf32> = dense_resource<w_blob> {alignment = 64 : i64}
memref.global "private" constant @b : memref<2xf32> = dense_resource<b_blob>
memref.global "private" constant @small : memref<2x1xf32> = dense<[[1.0], [2.0]]>
memref.global "private" @state : memref<2x1xf32> = dense_resource<state_blob>
func.func @main(%out: memref<2x4x1x1xf32>, %b_out: memref<2xf32>, %s_out: memref<2x1xf32>) {
  %w = memref.get_global @w : memref<2x4x1x1xf32>
  %b = memref.get_global @b : memref<2xf32>
  %s = memref.get_global @small : memref<2x1xf32>
  memref.copy %w, %out : memref<2x4x1x1xf32> to memref<2x4x1x1xf32>
  memref.copy %b, %b_out : memref<2xf32> to memref<2xf32>
  memref.copy %s, %s_out : memref<2x1xf32> to memref<2x1xf32>
  return
}

{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041",
      b_blob: "0x040000000000803F00000040",
      state_blob: "0x040000000000803F00000040"
    }
  }
#-}
