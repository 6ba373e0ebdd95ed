// graph-to-loop for the nn, reduction and shape ops: which linalg blocks each op becomes, with
// which names and indexing maps (docs/graph-ops.md). reshape is a view in the graph function.
// RUN: mlcir-opt %s --graph-to-loop | FileCheck %s

// CHECK-DAG: #[[$GROUPED_X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 floordiv 4) * 2 + d4, d2 + d5, d3 + d6)>
// CHECK-DAG: #[[$GROUPED_W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
// CHECK-DAG: #[[$GROUPED_O:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$POOL_X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2 * 2 + d4, d3 + d5, d6)>
// CHECK-DAG: #[[$POOL_TAPS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6)>
// CHECK-DAG: #[[$ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$HW:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[$ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[$KEEP02:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$MIDDLE:.*]] = affine_map<(d0, d1, d2) -> (d1)>

// CHECK-LABEL: func.func @conv
// CHECK: call @conv2d(
// CHECK: call @conv2d_1(
func.func @conv(%x: tensor<1x4x9x9xf32>, %w: tensor<8x4x3x3xf32>, %wg: tensor<8x2x3x3xf32>) -> (tensor<1x8x5x5xf32>, tensor<1x8x9x9xf32>) {
  %0 = "graph.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x5x5xf32>
  %1 = "graph.conv2d"(%x, %wg) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x9x9xf32>
  return %0, %1 : tensor<1x8x5x5xf32>, tensor<1x8x9x9xf32>
}
// CHECK-LABEL: func.func @pool
// CHECK: call @max_pool2d(
// CHECK: call @avg_pool2d(
func.func @pool(%x: tensor<1x4x10x10xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) {
  %0 = "graph.max_pool2d"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x4x10x10xf32>) -> tensor<1x4x5x5xf32>
  %1 = "graph.avg_pool2d"(%x) {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x4x10x10xf32>) -> tensor<1x4x5x5xf32>
  return %0, %1 : tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>
}
// CHECK-LABEL: func.func @norms
// CHECK: call @softmax(
// CHECK: call @layer_norm(
// CHECK: call @mean(
func.func @norms(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x1x16xf32>) {
  %0 = "graph.softmax"(%x) {axis = 2 : i64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %1 = "graph.layer_norm"(%x, %g, %b) {axes = array<i64: 2>, epsilon = 1.0e-5 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %2 = "graph.mean"(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x8x16xf32>) -> tensor<2x1x16xf32>
  return %0, %1, %2 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x1x16xf32>
}
// reshape is a view where it stands (no kernel): a collapse, then an expand.
// CHECK-LABEL: func.func @shapes
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>, %[[I:.*]]: tensor<5xi32>)
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1], [2]] output_shape [4, 4, 16] : tensor<16x16xf32> into tensor<4x4x16xf32>
// CHECK-NOT: call @reshape
// CHECK: call @strided_slice(
// CHECK: call @take(
// CHECK: return %[[C]], %[[E]],
func.func @shapes(%x: tensor<2x8x16xf32>, %i: tensor<5xi32>) -> (tensor<16x16xf32>, tensor<4x4x16xf32>, tensor<2x4x16xf32>, tensor<2x5x16xf32>) {
  %0 = "graph.reshape"(%x) {shape = array<i64: 16, 16>} : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %1 = "graph.reshape"(%0) {shape = array<i64: 4, 4, 16>} : (tensor<16x16xf32>) -> tensor<4x4x16xf32>
  %2 = "graph.strided_slice"(%x) {begin = array<i64: 0, 1, 0>, end = array<i64: 2, 8, 16>, strides = array<i64: 1, 2, 1>} : (tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %3 = "graph.take"(%x, %i) {axis = 1 : i64} : (tensor<2x8x16xf32>, tensor<5xi32>) -> tensor<2x5x16xf32>
  return %0, %1, %2, %3 : tensor<16x16xf32>, tensor<4x4x16xf32>, tensor<2x4x16xf32>, tensor<2x5x16xf32>
}
// CHECK-LABEL: func.func @reversed
// CHECK: call @strided_slice_1(
func.func @reversed(%x: tensor<2x8x16xf32>) -> tensor<2x4x16xf32> {
  %0 = "graph.strided_slice"(%x) {begin = array<i64: 1, 7, 15>, end = array<i64: -1, -1, -1>, strides = array<i64: -1, -2, -1>} : (tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// Padding is blocks: a fill of each border strip of the padded shape (rows above and below,
// columns left and right; not the interior, which the copy writes) and a copy into its
// interior. A width stride
// of 2 splits the input into two phases (columns 0, 2, .. and 1, 3, ..; padded right to 12
// columns so they split evenly): block "deinterleave" copies them apart and there is one
// stride-1 convolution per phase over its taps (kw = 0, 2 and kw = 1), the second
// accumulating into the first.
// CHECK-LABEL: func.func private @conv2d(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x4x9x9xf32>, %[[W:[^:]*]]: tensor<8x4x3x3xf32>, %[[OUT:[^:]*]]: tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32> attributes {loop.kernel}
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<1x4x11x12xf32>
// CHECK: %[[TOP:.*]] = linalg.fill {loop.block = "pad_init", {{.*}}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x1x12xf32>)
// CHECK: %[[P0:.*]] = tensor.insert_slice %[[TOP]] into %[[EMPTY]][0, 0, 0, 0] [1, 4, 1, 12] [1, 1, 1, 1]
// CHECK: %[[BOTTOM:.*]] = linalg.fill {loop.block = "pad_init_1", {{.*}}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x1x12xf32>)
// CHECK: %[[P1:.*]] = tensor.insert_slice %[[BOTTOM]] into %[[P0]][0, 0, 10, 0] [1, 4, 1, 12] [1, 1, 1, 1]
// CHECK: %[[LEFT:.*]] = linalg.fill {loop.block = "pad_init_2", {{.*}}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x9x1xf32>)
// CHECK: %[[P2:.*]] = tensor.insert_slice %[[LEFT]] into %[[P1]][0, 0, 1, 0] [1, 4, 9, 1] [1, 1, 1, 1]
// CHECK: %[[RIGHT:.*]] = linalg.fill {loop.block = "pad_init_3", {{.*}}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x9x2xf32>)
// CHECK: %[[PADDED:.*]] = tensor.insert_slice %[[RIGHT]] into %[[P2]][0, 0, 1, 10] [1, 4, 9, 2] [1, 1, 1, 1]
// CHECK: %[[INTERIOR:.*]] = tensor.extract_slice %[[PADDED]][0, 0, 1, 1] [1, 4, 9, 9] [1, 1, 1, 1]
// CHECK: %[[COPY:.*]] = linalg.copy {{{.*}}loop.block = "pad"{{.*}}} ins(%[[X]] : tensor<1x4x9x9xf32>) outs(%[[INTERIOR]] : tensor<1x4x9x9xf32>)
// CHECK: %[[IN:.*]] = tensor.insert_slice %[[COPY]] into %[[PADDED]][0, 0, 1, 1] [1, 4, 9, 9] [1, 1, 1, 1]
// CHECK: %[[VIEW:.*]] = tensor.expand_shape %[[IN]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 4, 11, 6, 2]
// CHECK: %[[PHASES:.*]] = linalg.transpose ins(%[[VIEW]] : tensor<1x4x11x6x2xf32>) outs(%{{.*}} : tensor<1x4x11x2x6xf32>) permutation = [0, 1, 2, 4, 3] {loop.block = "deinterleave"
// CHECK: %[[EVEN:.*]] = tensor.extract_slice %[[PHASES]][0, 0, 0, 0, 0] [1, 4, 11, 1, 6] [1, 1, 1, 1, 1] : tensor<1x4x11x2x6xf32> to tensor<1x4x11x6xf32>
// CHECK: %[[ODD:.*]] = tensor.extract_slice %[[PHASES]][0, 0, 0, 1, 0] [1, 4, 11, 1, 5] [1, 1, 1, 1, 1] : tensor<1x4x11x2x6xf32> to tensor<1x4x11x5xf32>
// CHECK: %[[INIT:.*]] = linalg.fill {loop.block = "conv2d_init", {{.*}}} ins(%{{.*}} : f32) outs(%[[OUT]] : tensor<1x8x5x5xf32>)
// CHECK: %[[W_EVEN:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 0] [8, 4, 3, 2] [1, 1, 1, 2]
// CHECK: %[[CONV:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, loop.block = "conv2d", loop.iterators = [#loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"spatial">, #loop.iterator<"reduction">, #loop.iterator<"reduction">, #loop.iterator<"reduction">], strides = dense<[2, 1]> : tensor<2xi64>} ins(%[[EVEN]], %[[W_EVEN]] : tensor<1x4x11x6xf32>, tensor<8x4x3x2xf32>) outs(%[[INIT]] : tensor<1x8x5x5xf32>)
// CHECK: %[[W_ODD:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 1] [8, 4, 3, 1] [1, 1, 1, 2]
// CHECK: %[[CONV1:.*]] = linalg.conv_2d_nchw_fchw {{{.*}}loop.block = "conv2d_1", {{.*}}strides = dense<[2, 1]> : tensor<2xi64>} ins(%[[ODD]], %[[W_ODD]] : tensor<1x4x11x5xf32>, tensor<8x4x3x1xf32>) outs(%[[CONV]] : tensor<1x8x5x5xf32>)
// CHECK: return %[[CONV1]]

// Grouped: one generic with conv_2d_nchw_fchw's loops reading channel (o floordiv 4) * 2 + c;
// its multiply-add may contract to one FMA (vectorized, it stays elementwise).
// CHECK-LABEL: func.func private @conv2d_1(
// CHECK: linalg.copy {{{.*}}loop.block = "pad"
// CHECK: %[[INIT:.*]] = linalg.fill {loop.block = "conv2d_init"
// CHECK: linalg.generic {indexing_maps = [#[[$GROUPED_X]], #[[$GROUPED_W]], #[[$GROUPED_O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<1x8x9x9xf32>)
// CHECK-SAME: loop.block = "conv2d"
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %[[P]] fastmath<contract> : f32

// Max pooling reads no padded copy: each rectangle of outputs whose windows keep the same
// in-bounds taps is a pooling of its own (ceil mode: the last row and column keep two rows /
// columns of taps), the interior first. The strided ones read the view [.., 5, 2] of the
// input: tap kw = 2 * kq + kr, and a mask leaves out (kq, kr) = (1, 1), past the 3-wide
// window. A rectangle one column wide is a named pooling of a slice.
// CHECK-LABEL: func.func private @max_pool2d(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x4x10x10xf32>, %[[OUT:[^:]*]]: tensor<1x4x5x5xf32>)
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NOT: loop.block = "pad
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[OUT]][0, 0, 0, 0] [1, 4, 4, 4]
// CHECK: %[[INIT:.*]] = linalg.fill {loop.block = "max_pool2d_init", {{.*}}} ins(%[[NINF]] : f32) outs(%[[PART]] : tensor<1x4x4x4xf32>)
// CHECK: %[[VIEW:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 4, 10, 5, 2]
// CHECK: %[[RECT:.*]] = tensor.extract_slice %[[VIEW]][0, 0, 0, 0, 0] [1, 4, 9, 5, 2]
// CHECK: %[[MASK:.*]] = arith.constant dense<{{\[}}{{\[}}[1, 1], [1, 0]], {{.*}}> : tensor<3x2x2xi8>
// CHECK: %[[INNER:.*]] = linalg.generic {indexing_maps = [#[[$POOL_X]], #[[$POOL_TAPS]], #[[$GROUPED_O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[RECT]], %[[MASK]] : tensor<1x4x9x5x2xf32>, tensor<3x2x2xi8>) outs(%[[INIT]] : tensor<1x4x4x4xf32>) attrs = {loop.block = "max_pool2d"
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[NINF]]
// CHECK: arith.maxnumf
// CHECK: %[[DONE:.*]] = tensor.insert_slice %[[INNER]] into %[[OUT]][0, 0, 0, 0] [1, 4, 4, 4]
// CHECK: tensor.extract_slice %[[DONE]][0, 0, 0, 4] [1, 4, 4, 1]
// CHECK: linalg.fill {loop.block = "max_pool2d_1_init"
// CHECK: %[[COLUMN:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 8] [1, 4, 9, 2]
// CHECK: linalg.pooling_nchw_max {{{.*}}loop.block = "max_pool2d_1", {{.*}}strides = dense<2> : tensor<2xi64>} ins(%[[COLUMN]], %{{.*}} : tensor<1x4x9x2xf32>, tensor<3x2xf32>)
// CHECK: tensor.extract_slice %[[VIEW]][0, 0, 8, 0, 0] [1, 4, 2, 5, 2]
// CHECK: loop.block = "max_pool2d_2"
// CHECK: tensor.extract_slice %[[X]][0, 0, 8, 8] [1, 4, 2, 2]
// CHECK: loop.block = "max_pool2d_3"
// CHECK-NOT: loop.block

// Average pooling: window sums (padded by one: the interior's taps start one column early,
// kw = 2 * kq + kr - 1, so the mask leaves out (0, 0)) into the result, then a divide there
// in place by the counted taps (a [OH, OW] table here: count_include_pad = 0 with padding).
// CHECK-LABEL: func.func private @avg_pool2d(
// CHECK-SAME: %[[OUT:[^:]*]]: tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
// CHECK-NOT: loop.block = "pad
// CHECK: linalg.fill {loop.block = "sum_pool_init"
// CHECK: arith.constant dense<{{\[}}{{\[}}[0, 1], [1, 1]], {{.*}}> : tensor<3x2x2xi8>
// CHECK: linalg.generic {{.*}} attrs = {loop.block = "sum_pool"
// CHECK: arith.addf
// CHECK: loop.block = "sum_pool_3"
// CHECK: %[[SUMS:.*]] = tensor.insert_slice
// CHECK: %[[DIV:.*]] = arith.constant dense<{{\[}}[4.000000e+00, 6.000000e+00, {{.*}}9.000000e+00]]> : tensor<5x5xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$HW]], #[[$ID4]]], {{.*}}} ins(%[[DIV]] : {{.*}}) outs(%[[SUMS]] : tensor<1x4x5x5xf32>) attrs = {loop.block = "avg_pool2d"
// CHECK: arith.divf

// Softmax: max reduction, exp(x - max), sum reduction, divide (the schedule's softmax form).
// CHECK-LABEL: func.func private @softmax(
// CHECK: linalg.fill {loop.block = "max_init"
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROWS]]], iterator_types = ["parallel", "parallel", "reduction"]} {{.*}} attrs = {loop.block = "max"
// CHECK: arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROWS]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %[[MAX]] : {{.*}}) {{.*}} attrs = {loop.block = "exp"
// CHECK: math.exp
// CHECK: linalg.fill {loop.block = "sum_init"
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] : {{.*}}) {{.*}} attrs = {loop.block = "sum"
// CHECK: linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : {{.*}}) {{.*}} attrs = {loop.block = "softmax"
// CHECK: arith.divf

// Layer norm: mean (a sum), center, var (sum of squares), then the normalisation with gamma and
// beta read along the normalised axis.
// CHECK-LABEL: func.func private @layer_norm(
// CHECK: linalg.fill {loop.block = "mean_init"
// CHECK: %[[TOTAL:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROWS]]], iterator_types = ["parallel", "parallel", "reduction"]} {{.*}} attrs = {loop.block = "mean"
// CHECK: %[[CENTER:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[TOTAL]] : {{.*}}) {{.*}} attrs = {loop.block = "center"
// CHECK: linalg.fill {loop.block = "var_init"
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[CENTER]] : {{.*}}) {{.*}} attrs = {loop.block = "var"
// CHECK: linalg.generic {indexing_maps = [#[[$ID3]], #[[$ROWS]], #[[$LAST]], #[[$LAST]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[CENTER]], %[[VAR]], %{{.*}}, %{{.*}} : {{.*}}) {{.*}} attrs = {loop.block = "layer_norm"
// CHECK: math.rsqrt

// mean with keepdims: the sum reduces into a temporary; the divide writes the destination.
// CHECK-LABEL: func.func private @mean(
// CHECK-SAME: %[[OUT:[^:]*]]: tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$KEEP02]]], iterator_types = ["parallel", "reduction", "parallel"]} {{.*}} outs(%{{.*}} : tensor<2x16xf32>) attrs = {loop.block = "sum"
// CHECK: %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: linalg.generic {indexing_maps = [#[[$KEEP02]], #[[$ID3]]], {{.*}} ins(%[[SUM]] : tensor<2x16xf32>) outs(%[[OUT]] : tensor<2x1x16xf32>) attrs = {loop.block = "mean"
// CHECK: arith.divf %{{.*}}, %[[N]]

// Positive strides: a strided view copied by a block.
// CHECK-LABEL: func.func private @strided_slice(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8x16xf32>, %[[OUT:[^:]*]]: tensor<2x4x16xf32>)
// CHECK: %[[VIEW:.*]] = tensor.extract_slice %[[X]][0, 1, 0] [2, 4, 16] [1, 2, 1]
// CHECK: linalg.copy {{{.*}}loop.block = "strided_slice"{{.*}}} ins(%[[VIEW]] : tensor<2x4x16xf32>) outs(%[[OUT]] : tensor<2x4x16xf32>)

// take: a gather block over the result reading the indices; negative ones wrap, all clamp.
// CHECK-LABEL: func.func private @take(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8x16xf32>, %[[I:[^:]*]]: tensor<5xi32>, %[[OUT:[^:]*]]: tensor<2x5x16xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[$MIDDLE]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[I]] : tensor<5xi32>) outs(%[[OUT]] : tensor<2x5x16xf32>) attrs = {loop.block = "take"
// CHECK: ^bb0(%[[IDX:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[K:.*]] = arith.index_cast %[[IDX]] : i32 to index
// CHECK: arith.cmpi slt, %[[K]]
// CHECK: arith.select
// CHECK: arith.maxsi
// CHECK: %[[J:.*]] = arith.minsi
// CHECK: %[[A:.*]] = linalg.index 0 : index
// CHECK: %[[B:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %[[X]][%[[A]], %[[J]], %[[B]]] : tensor<2x8x16xf32>

// A negative stride: a gather computing begin + stride * i (never a negative affine map).
// CHECK-LABEL: func.func private @strided_slice_1(
// CHECK: linalg.generic {indexing_maps = [#[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<2x4x16xf32>) attrs = {loop.block = "strided_slice"
// CHECK: %[[I1:.*]] = linalg.index 1 : index
// CHECK: %[[C:.*]] = arith.constant -2 : index
// CHECK: arith.muli %[[I1]], %[[C]] : index
// CHECK: tensor.extract
