
func.func @main(%A: tensor<128x64xf32>, %B: tensor<64x128xf32>) -> tensor<128x128xf32> {
  %e = tensor.empty() : tensor<128x128xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill {loop.block = "C_init"} ins(%z : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.matmul {loop.block = "C"} ins(%A, %B : tensor<128x64xf32>, tensor<64x128xf32>) outs(%f : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}
