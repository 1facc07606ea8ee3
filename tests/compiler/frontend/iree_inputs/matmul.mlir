// A 128x512 by 512x256 f32 matmul whose weight is a global: iree-compile hoists its packing
// to load time. iree-compile's input in test_iree_import.py.
util.global private @w = #util.byte_pattern<1> : tensor<512x256xf32>
func.func @mm(%a: tensor<128x512xf32>) -> tensor<128x256xf32> {
  %b = util.global.load @w : tensor<512x256xf32>
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x512xf32>, tensor<512x256xf32>) outs(%f : tensor<128x256xf32>) -> tensor<128x256xf32>
  return %r : tensor<128x256xf32>
}
