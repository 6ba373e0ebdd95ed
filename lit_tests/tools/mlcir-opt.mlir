// mlcir-opt behaves like mlir-opt: stdin, -o, pipelines mixing mlcir and upstream passes,
// --mlir-print-ir-after-all, close matches for unknown passes, non-zero exit on errors.
// RUN: mlcir-opt < %s | FileCheck %s --check-prefix=ROUND
// RUN: mlcir-opt %s -o %t.out && FileCheck %s --check-prefix=ROUND < %t.out
// RUN: mlcir-opt %s --pass-pipeline="builtin.module(graph-to-loop, func.func(canonicalize), cse)" | FileCheck %s --check-prefix=PIPE
// RUN: mlcir-opt %s --graph-to-loop --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: not mlcir-opt %s --graph-to-lop 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: not mlcir-opt %s --pass-pipeline="builtin.module(func.func(graph-to-loop))" 2>&1 | FileCheck %s --check-prefix=NEST
// RUN: not mlcir-opt %t.does-not-exist 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: mlcir-opt --list-passes | FileCheck %s --check-prefix=LIST

// ROUND: "graph.relu"
// PIPE: call @relu
// PIPE: linalg.generic
// AFTER: IR Dump After graph-to-loop
// AFTER: call @relu
// TYPO: mlcir-opt: error: unknown pass or pipeline 'graph-to-lop'; did you mean: graph-to-loop
// NEST: mlcir pass 'graph-to-loop' runs on the whole module
// NOFILE: mlcir-opt: error: cannot read {{.*}}does-not-exist
// LIST-DAG: --graph-to-loop
// LIST-DAG: --mlcir-cpu
// LIST-DAG: --graph-bind-params

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
