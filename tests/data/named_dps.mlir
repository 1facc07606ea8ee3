module {
  func.func @main(%arg0: tensor<64x64xbf16> {ttir.name = "a"}, %arg1: tensor<64x64xbf16> {ttir.name = "b"}) -> tensor<64x64xbf16> {
    %0 = tensor.empty() : tensor<64x64xbf16>
    %1 = "ttir.add"(%arg0, %arg1, %0) : (tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("block.0.add")
    %2 = tensor.empty() : tensor<64x64xbf16>
    %3 = "ttir.add"(%1, %arg1, %2) : (tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("block.0.add")
    %4 = "ttir.frobnicate"(%3) : (tensor<64x64xbf16>) -> tensor<64x64xbf16>
    %5 = "ttir.relu"(%4) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("block.0.act")
    return %5 : tensor<64x64xbf16>
  }
}
