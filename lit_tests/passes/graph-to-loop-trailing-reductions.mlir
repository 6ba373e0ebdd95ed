// graph-to-loop merges reduced axes that are the input's innermost into one (a collapse_shape
// view): a global average pool's 7x7 window becomes one contiguous row of 49, which the
// default schedule reads as vector rows (mlcir/targets/cpu/defaults.py, _short_rows). Other
// reductions keep their dims.
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

// CHECK-DAG: #[[$ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$KEPT:.*]] = affine_map<(d0, d1) -> (d0, 0, 0)>
// CHECK-DAG: #[[$MIDDLE:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>

// CHECK-LABEL: func.func private @mean(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x8x3x3xf32>
// CHECK: %[[ROW:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : tensor<1x8x3x3xf32> into tensor<1x8x9xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROWS]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[ROW]] : tensor<1x8x9xf32>) outs(%{{.*}} : tensor<1x8xf32>) attrs = {loop.block = "sum"
// CHECK: arith.constant 9.000000e+00 : f32

// keepdims: the merged row's sum writes the kept size-1 dims at index 0.
// CHECK-LABEL: func.func private @sum(
// CHECK-SAME: %[[Y:[^:]*]]: tensor<2x4x5xf32>, %[[OUT:[^:]*]]: tensor<2x1x1xf32>
// CHECK: %[[ROW:.*]] = tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2]] : tensor<2x4x5xf32> into tensor<2x20xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$ID2]], #[[$KEPT]]], iterator_types = ["parallel", "reduction"]} ins(%[[ROW]] : tensor<2x20xf32>) outs(%{{.*}} : tensor<2x1x1xf32>) attrs = {loop.block = "sum"

// A reduced axis that is not innermost: no collapse.
// CHECK-LABEL: func.func private @max(
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {indexing_maps = [#[[$ID3]], #[[$MIDDLE]]], iterator_types = ["parallel", "reduction", "parallel"]}
func.func @reductions(%x: tensor<1x8x3x3xf32>, %y: tensor<2x4x5xf32>) -> (tensor<1x8x1x1xf32>, tensor<2x1x1xf32>, tensor<2x5xf32>) {
  %0 = "graph.mean"(%x) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x8x3x3xf32>) -> tensor<1x8x1x1xf32>
  %1 = "graph.sum"(%y) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x4x5xf32>) -> tensor<2x1x1xf32>
  %2 = "graph.max"(%y) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x4x5xf32>) -> tensor<2x5xf32>
  return %0, %1, %2 : tensor<1x8x1x1xf32>, tensor<2x1x1xf32>, tensor<2x5xf32>
}
