// mlcir-gpu-device-buffers: the entry function is split into host copies (numpy arrays in,
// results out) and main__device (kernels on device buffers); a host-side intermediate becomes
// gpu.alloc/gpu.dealloc, a workgroup allocation inside a kernel a workgroup attribution, a
// private one a memref.alloca, and a global the kernel reads is cloned into the kernel.
// RUN: mlcir-opt %s --mlcir-gpu-device-buffers | FileCheck %s

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK: %[[DX:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[DX]], %[[X]]
// CHECK: %[[DOUT:.*]] = gpu.alloc () : memref<4xf32>
// CHECK-NOT: gpu.memcpy %[[DOUT]], %[[OUT]]
// CHECK: call @main__device(%[[DX]], %[[DOUT]])
// CHECK: gpu.dealloc %[[DX]]
// CHECK: gpu.memcpy %[[OUT]], %[[DOUT]]
// CHECK: gpu.dealloc %[[DOUT]]
// CHECK-LABEL: func.func @main__device(
// CHECK-SAME: mlcir.gpu.device
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.launch {{.*}} workgroup(%[[S:.*]] : memref<4xf32, #gpu.address_space<workgroup>>)
// CHECK-NEXT: %[[W:.*]] = memref.get_global @weights
// CHECK-NEXT: memref.alloca() : memref<2xf32>
// CHECK: memref.load %[[W]]
// CHECK: memref.store {{.*}}, %[[S]]
// CHECK: memref.store {{.*}}, %[[TMP]]
// CHECK-NOT: memref.dealloc
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: gpu.dealloc %[[TMP]]
memref.global "private" constant @weights : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) attributes {mlcir.gpu.outputs = 1 : i64} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %w = memref.get_global @weights : memref<4xf32>
  %tmp = memref.alloc() : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %s = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
    %p = memref.alloc() : memref<2xf32>
    %v = memref.load %x[%tx] : memref<4xf32>
    %u = memref.load %w[%tx] : memref<4xf32>
    memref.store %v, %s[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %a = memref.load %s[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
    %r = arith.mulf %a, %u : f32
    memref.store %r, %tmp[%tx] : memref<4xf32>
    memref.dealloc %p : memref<2xf32>
    memref.dealloc %s : memref<4xf32, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = memref.load %tmp[%tx] : memref<4xf32>
    memref.store %v, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  memref.dealloc %tmp : memref<4xf32>
  return
}
