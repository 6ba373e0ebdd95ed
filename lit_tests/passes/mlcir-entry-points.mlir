// mlcir-entry-points: public functions with a body get llvm.emit_c_interface (the runtime calls
// _mlir_ciface_<name>) and their tensor arguments bufferization.writable = false (the caller's
// arrays are never overwritten); other arguments, argument attributes already there, private
// functions and declarations are left alone.
// RUN: mlcir-opt %s --mlcir-entry-points | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {bufferization.writable = false}, %{{.*}}: index, %{{.*}}: memref<4xf32>)
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func @main(%x: tensor<4xf32>, %n: index, %out: memref<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{.*}}: tensor<4xf32>) -> tensor<4xf32> {
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// CHECK: func.func private @decl(tensor<4xf32>) -> tensor<4xf32>{{$}}
func.func private @decl(tensor<4xf32>) -> tensor<4xf32>

// CHECK-LABEL: func.func @named
// CHECK-SAME: {bufferization.writable = false, graph.name = "image"}
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func @named(%x: tensor<2xf32> {graph.name = "image"}) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
