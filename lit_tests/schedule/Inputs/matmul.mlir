// A 64x64x32 matmul kernel (input of transform-script.mlir).
func.func @main(%A: tensor<64x32xf32>, %B: tensor<32x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill {loop.block = "C_init"} ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul {loop.block = "C"} ins(%A, %B : tensor<64x32xf32>, tensor<32x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
