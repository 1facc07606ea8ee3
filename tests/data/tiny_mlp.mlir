func.func @forward(%arg0: tensor<32x64xf32> {ttir.name = "x"}, %arg1: tensor<64x128xf32> {ttir.name = "fc1.weight"}, %arg2: tensor<1x128xf32> {ttir.name = "fc1.bias"}, %arg3: tensor<128x64xf32> {ttir.name = "fc2.weight"}) -> (tensor<32x64xf32> {ttir.name = "out"}) {
  %0 = "ttir.matmul"(%arg0, %arg1) : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  %1 = "ttir.add"(%0, %arg2) : (tensor<32x128xf32>, tensor<1x128xf32>) -> tensor<32x128xf32>
  %2 = "ttir.relu"(%1) : (tensor<32x128xf32>) -> tensor<32x128xf32>
  %3 = "ttir.matmul"(%2, %arg3) : (tensor<32x128xf32>, tensor<128x64xf32>) -> tensor<32x64xf32>
  return %3 : tensor<32x64xf32>
}
