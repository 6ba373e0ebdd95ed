// mlcir-gpu-check-launch refuses a launch beyond the device limits, naming the kernel, each
// value and its limit; a launch within them passes unchanged.
// RUN: split-file %s %t
// RUN: mlcir-opt %t/fits.mlir --mlcir-gpu-check-launch | FileCheck %s
// RUN: not mlcir-opt %t/too-big.mlir --mlcir-gpu-check-launch 2>&1 | FileCheck %s --check-prefix=ERR

// CHECK-LABEL: func.func @fits
// CHECK: gpu.launch

// ERR: mlcir-opt: error: GPU kernel in function 'too_big' (at {{.*}}too-big.mlir:5:3) cannot be launched: block dim x is 2048, above the limit of 1024; grid dim y is 70000, above the limit of 65535; 2048 threads per block (2048 x 1 x 1), above the limit of 1024 threads per block; 65536 bytes of static shared memory per block, above the limit of 49152 bytes (48 KiB)

//--- fits.mlir
func.func @fits(%a: memref<1024xf32>) {
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%o = %c1024, %p = %c1, %q = %c1) workgroup(%s : memref<12288xf32, #gpu.address_space<workgroup>>) {
    %v = memref.load %a[%tx] : memref<1024xf32>
    gpu.terminator
  }
  return
}

//--- too-big.mlir
func.func @too_big(%a: memref<2048xf32>) {
  %c1 = arith.constant 1 : index
  %c2048 = arith.constant 2048 : index
  %c70000 = arith.constant 70000 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c70000, %z = %c1) threads(%tx, %ty, %tz) in (%o = %c2048, %p = %c1, %q = %c1) workgroup(%s : memref<16384xf32, #gpu.address_space<workgroup>>) {
    %v = memref.load %a[%tx] : memref<2048xf32>
    gpu.terminator
  }
  return
}
