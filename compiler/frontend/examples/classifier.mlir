// A small image classifier head in TTIR generic form: two linear layers with ReLU and a softmax.
// Ops without loc names are named <op>_<n>; the last two carry names, as exporters emit them.
module {
  func.func @forward(%arg0: tensor<32x1024xbf16> {ttir.name = "features"},
                     %arg1: tensor<1024x2048xbf16> {ttir.name = "head.fc1.weight"},
                     %arg2: tensor<1x2048xbf16> {ttir.name = "head.fc1.bias"},
                     %arg3: tensor<2048x1000xbf16> {ttir.name = "head.fc2.weight"},
                     %arg4: tensor<1x1000xbf16> {ttir.name = "head.fc2.bias"}) -> tensor<32x1000xbf16> {
    %0 = "ttir.matmul"(%arg0, %arg1) : (tensor<32x1024xbf16>, tensor<1024x2048xbf16>) -> tensor<32x2048xbf16>
    %1 = "ttir.add"(%0, %arg2) : (tensor<32x2048xbf16>, tensor<1x2048xbf16>) -> tensor<32x2048xbf16>
    %2 = "ttir.relu"(%1) : (tensor<32x2048xbf16>) -> tensor<32x2048xbf16>
    %3 = "ttir.matmul"(%2, %arg3) : (tensor<32x2048xbf16>, tensor<2048x1000xbf16>) -> tensor<32x1000xbf16>
    %4 = "ttir.add"(%3, %arg4) : (tensor<32x1000xbf16>, tensor<1x1000xbf16>) -> tensor<32x1000xbf16> loc("head.logits")
    %5 = "ttir.softmax"(%4) <{dimension = 1 : si32}> : (tensor<32x1000xbf16>) -> tensor<32x1000xbf16> loc("head.probs")
    return %5 : tensor<32x1000xbf16>
  }
}
