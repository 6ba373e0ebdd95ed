// The `mlcir` command line on a graph-level module: help texts, compile with a dump of the
// kernels, run with filled inputs, one-line errors with a non-zero exit status.
// RUN: mlcir --help | FileCheck %s --check-prefix=HELP
// RUN: mlcir compile --help | FileCheck %s --check-prefix=COMPILE
// RUN: mlcir run --help | FileCheck %s --check-prefix=RUNHELP
// RUN: mlcir compile %s -o %t.mlcir -q --dump-mlir kernels - | FileCheck %s --check-prefix=KERNELS
// RUN: mlcir run %t.mlcir --fill-mode ones --print-top 3 --outputs %t.npz | FileCheck %s --check-prefix=OUT
// RUN: not mlcir run %s 2>&1 | FileCheck %s --check-prefix=NOTMODEL
// RUN: not mlcir compile %s --target tpu 2>&1 | FileCheck %s --check-prefix=TARGET

// HELP: usage: mlcir [-h] [--version] COMMAND
// HELP-DAG: compile {{ *}}compile a model into a saved model file
// HELP-DAG: run {{ *}}run a saved model on inputs from an .npz file
// HELP-DAG: tune {{ *}}tune a model's kernels and write the best records

// COMPILE: usage: mlcir compile
// COMPILE-DAG: --target TARGET
// COMPILE-DAG: --tuning-records PATH
// COMPILE-DAG: --input-shapes SHAPES
// COMPILE-DAG: --dump-mlir STAGE PATH
// COMPILE-DAG: -o PATH, --output PATH

// RUNHELP: usage: mlcir run
// RUNHELP-DAG: --inputs NPZ
// RUNHELP-DAG: --outputs NPZ
// RUNHELP-DAG: --fill-mode {random,zeros,ones}
// RUNHELP-DAG: --print-time
// RUNHELP-DAG: --threads N

// KERNELS: func.func @main(
// KERNELS: call @add(
// KERNELS: func.func private @add({{.*}} attributes {loop.kernel}
// KERNELS: linalg.generic {{.*}}loop.block = "add"

// OUT: y: float32[1, 4]  min 2  max 2  mean 2
// OUT-NEXT: top-3: 0 (2), 1 (2), 2 (2)

// NOTMODEL: mlcir: error: {{.*}}mlcir-cli.mlir: not an mlcir model
// TARGET: mlcir: error: bad target 'tpu'

func.func @main(%x: tensor<1x4xf32> {graph.name = "x"}) -> (tensor<1x4xf32> {graph.name = "y"}) {
  %0 = "graph.add"(%x, %x) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}
