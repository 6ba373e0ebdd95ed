// mlcir-profile-hooks: every call of a public function is bracketed by reads of the cycle
// counter stored in the buffer @__mlcir_profile_<fn> (slots 0/1: the function's entry and
// return; 2i+2/2i+3: call i), whose address the accessor returns; the call sites (callee,
// locations, destination shape, library or not) are recorded in mlcir.profile. Private
// functions are left alone.
// RUN: mlcir-opt %s --mlcir-profile-hooks | FileCheck %s

// CHECK: module attributes {mlcir.profile = "{{.*}}\22callee\22: \22k\22{{.*}}n2_Relu{{.*}}\22shape\22: \224\22, \22library\22: false{{.*}}\22callee\22: \22lib\22{{.*}}\22library\22: true
// CHECK: memref.global "public" @__mlcir_profile_main : memref<8xi64> = dense<0>
// CHECK-LABEL: func.func @__mlcir_profile_buffer_main() -> index
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK-LABEL: func.func private @k
// CHECK-NOT: readcyclecounter
// CHECK: return
// CHECK-LABEL: func.func @main
// CHECK: %[[BUF:.*]] = memref.get_global @__mlcir_profile_main
// CHECK: %[[T0:.*]] = llvm.call_intrinsic "llvm.readcyclecounter"() : () -> i64
// CHECK: memref.store %[[T0]], %[[BUF]][%c0]
// CHECK: memref.store %{{.*}}, %[[BUF]][%c2]
// CHECK-NEXT: call @k
// CHECK: memref.store %{{.*}}, %[[BUF]][%c3]
// CHECK: memref.store %{{.*}}, %[[BUF]][%c4]
// CHECK-NEXT: call @k
// CHECK: memref.store %{{.*}}, %[[BUF]][%c5]
// CHECK: memref.store %{{.*}}, %[[BUF]][%c6]
// CHECK-NEXT: call @lib
// CHECK: memref.store %{{.*}}, %[[BUF]][%c7]
// CHECK: memref.store %{{.*}}, %[[BUF]][%c1]
// CHECK-NEXT: return
func.func private @lib(memref<4xf32>)
func.func private @k(%a: memref<4xf32>) {
  return
}
func.func @main(%a: memref<4xf32>) attributes {llvm.emit_c_interface} {
  call @k(%a) : (memref<4xf32>) -> ()
  call @k(%a) : (memref<4xf32>) -> () loc("n2_Relu")
  call @lib(%a) : (memref<4xf32>) -> ()
  return
}
