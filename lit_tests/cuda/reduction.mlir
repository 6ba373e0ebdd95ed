// A softmax on CUDA with no schedule: each block gets its own kernel; the reductions (max,
// sum) map their row dim to threads and keep the reduction serial inside each thread.
// RUN: mlcir-opt %s --mlcir-cuda-mapped | FileCheck %s --check-prefix=MAP
// RUN: %PYTHON -m mlcir.targets.cuda %s --arch sm_80 | FileCheck %s --check-prefix=PTX

// MAP-LABEL: func.func @main__device(
// MAP: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) module(@main_max_init)
// MAP: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) module(@main_max)
// MAP: gpu.thread_id x
// MAP: scf.for
// MAP: arith.maximumf
// MAP: gpu.launch {{.*}} module(@main_exp)
// MAP: gpu.launch {{.*}} module(@main_sum_init)
// MAP: gpu.launch {{.*}} module(@main_sum)
// MAP: gpu.launch {{.*}} module(@main_norm)
// MAP-NOT: gpu.launch

// PTX-LABEL: // gpu.binary @main_max_init
// PTX-LABEL: // gpu.binary @main_max
// PTX: .target sm_80
// PTX: .visible .entry main_max(
// PTX: .maxntid 32, 1, 1
// PTX: mov.u32 {{.*}}, %tid.x;
// PTX: [[LOOP:\$L__BB[0-9_]+]]:
// PTX: max.NaN.f32
// PTX: bra {{.*}}[[LOOP]];
// PTX-LABEL: // gpu.binary @main_exp
// PTX: ex2.approx
// PTX-LABEL: // gpu.binary @main_sum
// PTX: add.rn.f32
// PTX-LABEL: // gpu.binary @main_norm
// PTX: div.rn.f32
func.func @main(%X: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32xf32>
  %mi = linalg.fill {loop.block = "max_init"} ins(%ninf : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"],
                        loop.block = "max"} ins(%X : tensor<32x128xf32>) outs(%mi : tensor<32xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %v = arith.maximumf %acc, %a : f32
      linalg.yield %v : f32
  } -> tensor<32xf32>
  %e2 = tensor.empty() : tensor<32x128xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"],
                        loop.block = "exp"} ins(%X, %mx : tensor<32x128xf32>, tensor<32xf32>) outs(%e2 : tensor<32x128xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %v = math.exp %d : f32
      linalg.yield %v : f32
  } -> tensor<32x128xf32>
  %si = linalg.fill {loop.block = "sum_init"} ins(%z : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %sm = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"],
                        loop.block = "sum"} ins(%ex : tensor<32x128xf32>) outs(%si : tensor<32xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %v = arith.addf %acc, %a : f32
      linalg.yield %v : f32
  } -> tensor<32xf32>
  %e3 = tensor.empty() : tensor<32x128xf32>
  %nm = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"],
                        loop.block = "norm"} ins(%ex, %sm : tensor<32x128xf32>, tensor<32xf32>) outs(%e3 : tensor<32x128xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.divf %a, %b : f32
      linalg.yield %v : f32
  } -> tensor<32x128xf32>
  return %nm : tensor<32x128xf32>
}
