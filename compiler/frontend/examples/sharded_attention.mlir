// Self-attention split over 8 devices: the batch over "batch", the 8 heads over "model" (2 per
// device). The output projection contracts the head dimension, so each device holds a partial sum
// that the all_reduce over "model" completes.
module @sharded_attention attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["batch"=2, "model"=4]>
  func.func @main(
      %x: tensor<4x64x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}, {}]>},
      %wq: tensor<256x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>},
      %wk: tensor<256x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>},
      %wv: tensor<256x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>},
      %wo: tensor<256x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>})
      -> (tensor<4x64x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}, {}]>}) {
    %q = stablehlo.dot_general %x, %wq, contracting_dims = [2] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {}, {"model"}]>]>} : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
    %k = stablehlo.dot_general %x, %wk, contracting_dims = [2] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {}, {"model"}]>]>} : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
    %v = stablehlo.dot_general %x, %wv, contracting_dims = [2] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {}, {"model"}]>]>} : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
    %q4 = stablehlo.reshape %q : (tensor<4x64x256xf32>) -> tensor<4x64x8x32xf32>
    %k4 = stablehlo.reshape %k : (tensor<4x64x256xf32>) -> tensor<4x64x8x32xf32>
    %v4 = stablehlo.reshape %v : (tensor<4x64x256xf32>) -> tensor<4x64x8x32xf32>
    %qh = stablehlo.transpose %q4, dims = [0, 2, 1, 3] : (tensor<4x64x8x32xf32>) -> tensor<4x8x64x32xf32>
    %kh = stablehlo.transpose %k4, dims = [0, 2, 1, 3] : (tensor<4x64x8x32xf32>) -> tensor<4x8x64x32xf32>
    %vh = stablehlo.transpose %v4, dims = [0, 2, 1, 3] : (tensor<4x64x8x32xf32>) -> tensor<4x8x64x32xf32>
    %scores = stablehlo.dot_general %qh, %kh, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : (tensor<4x8x64x32xf32>, tensor<4x8x64x32xf32>) -> tensor<4x8x64x64xf32>
    %pinned = sdy.sharding_constraint %scores <@mesh, [{"batch"}, {"model"}, {}, {}]> : tensor<4x8x64x64xf32>
    %scale = sdy.constant dense<0.176776695> : tensor<f32>
    %scale4 = stablehlo.broadcast_in_dim %scale, dims = [] : (tensor<f32>) -> tensor<4x8x64x64xf32>
    %scaled = stablehlo.multiply %pinned, %scale4 : tensor<4x8x64x64xf32>
    %e = stablehlo.exponential %scaled : tensor<4x8x64x64xf32>
    %zero = sdy.constant dense<0.000000e+00> : tensor<f32>
    %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [3] : (tensor<4x8x64x64xf32>, tensor<f32>) -> tensor<4x8x64xf32>
    %sum4 = stablehlo.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<4x8x64xf32>) -> tensor<4x8x64x64xf32>
    %p = stablehlo.divide %e, %sum4 : tensor<4x8x64x64xf32>
    %ctx = stablehlo.dot_general %p, %vh, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<4x8x64x64xf32>, tensor<4x8x64x32xf32>) -> tensor<4x8x64x32xf32>
    %ctx_t = stablehlo.transpose %ctx, dims = [0, 2, 1, 3] : (tensor<4x8x64x32xf32>) -> tensor<4x64x8x32xf32>
    %merged = stablehlo.reshape %ctx_t : (tensor<4x64x8x32xf32>) -> tensor<4x64x256xf32>
    %partial = stablehlo.dot_general %merged, %wo, contracting_dims = [2] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"batch"}, {}, {}], unreduced={"model"}>]>} : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
    %out = sdy.all_reduce {"model"} %partial out_sharding=<@mesh, [{"batch"}, {}, {}]> : tensor<4x64x256xf32>
    return %out : tensor<4x64x256xf32>
  }
}
