// A recorded schedule (transform IR with its knobs) applied by mlcir-opt, with no Python
// schedule code; then the CPU pipeline lowers the result.
// RUN: mlcir-opt %S/Inputs/matmul.mlir --transform-script=%S/Inputs/course_schedule.mlir | FileCheck %s
// RUN: mlcir-opt %S/Inputs/matmul.mlir --transform-script=%S/Inputs/course_schedule.mlir --mlcir-cpu | FileCheck %s --check-prefix=LLVM
// RUN: not mlcir-opt %S/Inputs/matmul.mlir --transform-script=%t.missing 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @main
// CHECK-SAME: attributes {loop.scheduled}
// CHECK: scf.forall (%{{.*}}) in (64)
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK: linalg.fill {loop.block = "C_init"
// CHECK: vector.contract
// CHECK: {loop.name = "C.j_0", loop.serial}
// CHECK: {loop.name = "C.i", loop.serial}

// LLVM: llvm.func @main
// LLVM: llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// LLVM-NOT: scf.

// MISSING: mlcir-opt: error: cannot read transform script {{.*}}missing
