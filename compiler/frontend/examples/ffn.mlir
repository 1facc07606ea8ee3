// A transformer feed-forward block in TTIR generic form, as a PyTorch export names its ops:
// 256 tokens of width 1024, a 4x wider hidden layer with GELU, a residual add and a layer norm.
// Every size is a multiple of 8 tiles of 32, so each layout the README shows divides it evenly.
module {
  func.func @forward(%x: tensor<256x1024xbf16> {ttir.name = "hidden_states"},
                     %w1: tensor<1024x4096xbf16> {ttir.name = "ffn.fc1.weight"},
                     %b1: tensor<1x4096xbf16> {ttir.name = "ffn.fc1.bias"},
                     %w2: tensor<4096x1024xbf16> {ttir.name = "ffn.fc2.weight"},
                     %b2: tensor<1x1024xbf16> {ttir.name = "ffn.fc2.bias"},
                     %gamma: tensor<1024xbf16> {ttir.name = "ffn.norm.weight"},
                     %beta: tensor<1024xbf16> {ttir.name = "ffn.norm.bias"}) -> tensor<256x1024xbf16> {
    %0 = "ttir.matmul"(%x, %w1) : (tensor<256x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<256x4096xbf16> loc("ffn.fc1")
    %1 = "ttir.add"(%0, %b1) : (tensor<256x4096xbf16>, tensor<1x4096xbf16>) -> tensor<256x4096xbf16> loc("ffn.fc1.bias_add")
    %2 = "ttir.gelu"(%1) : (tensor<256x4096xbf16>) -> tensor<256x4096xbf16> loc("ffn.act")
    %3 = "ttir.matmul"(%2, %w2) : (tensor<256x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<256x1024xbf16> loc("ffn.fc2")
    %4 = "ttir.add"(%3, %b2) : (tensor<256x1024xbf16>, tensor<1x1024xbf16>) -> tensor<256x1024xbf16> loc("ffn.fc2.bias_add")
    %5 = "ttir.add"(%4, %x) : (tensor<256x1024xbf16>, tensor<256x1024xbf16>) -> tensor<256x1024xbf16> loc("ffn.residual")
    %6 = "ttir.layer_norm"(%5, %gamma, %beta) <{epsilon = 1.0e-05 : f32, normalized_shape = array<i64: 1024>}> : (tensor<256x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) -> tensor<256x1024xbf16> loc("ffn.norm")
    return %6 : tensor<256x1024xbf16>
  }
}
