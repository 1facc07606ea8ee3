// A feed-forward block (256x512 by 512x2048, ReLU, by 2048x512, f32; weights as globals) as IREE prints
// it after global optimization with data-tiling for an AVX-512 CPU (the x86_avx512 target's flags):
//   iree-compile ffn.mlir --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu \
//     --iree-llvmcpu-target-cpu=znver4 --iree-global-opt-data-tiling --compile-to=global-optimization
// The activations are packed into 16x1 inner tiles and the results unpacked from 16x16 in the step;
// the weights' packs were done at compile time (the __hoisted_tensor globals). Try it with
//   tilescope run ffn_iree.mlir --target x86_avx512
module attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "znver4", cpu_features = "+adx,+aes,+avx,+avx2,+avx512bf16,+avx512bitalg,+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512ifma,+avx512vbmi,+avx512vbmi2,+avx512vl,+avx512vnni,+avx512vpopcntdq,+bmi,+bmi2,+clflushopt,+clwb,+clzero,+crc32,+cx16,+cx8,+f16c,+fma,+fsgsbase,+fxsr,+gfni,+invpcid,+lzcnt,+mmx,+movbe,+mwaitx,+pclmul,+pku,+popcnt,+prfchw,+rdpid,+rdpru,+rdrnd,+rdseed,+sahf,+sha,+shstk,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+sse4a,+ssse3,+vaes,+vpclmulqdq,+wbnoinvd,+x87,+xsave,+xsavec,+xsaveopt,+xsaves", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 64 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device
  util.global private @w1 = #util.byte_pattern<1> : tensor<512x2048xf32>
  util.global private @w2 = #util.byte_pattern<2> : tensor<2048x512xf32>
  util.global private @__hoisted_tensor_128x512x16x1xf32 {stream.affinity.default = #hal.device.affinity<@__device_0>} = dense<2.36942783E-38> : tensor<128x512x16x1xf32>
  util.global private @__hoisted_tensor_32x2048x16x1xf32 {stream.affinity.default = #hal.device.affinity<@__device_0>} = dense<9.55146781E-38> : tensor<32x2048x16x1xf32>
  util.func public @ffn(%arg0: !hal.buffer_view) -> !hal.buffer_view attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @ffn(%input0: tensor<256x512xf32>) -> (%output0: tensor<256x512xf32>)"}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<256x512xf32>
    %1 = iree_tensor_ext.compute_barrier.start %0 : tensor<256x512xf32> -> tensor<256x512xf32>
    %2 = tensor.empty() : tensor<256x2048xf32>
    %3 = tensor.empty() : tensor<16x512x16x1xf32>
    %pack = linalg.pack %1 outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [16, 1] into %3 : tensor<256x512xf32> -> tensor<16x512x16x1xf32>
    %__hoisted_tensor_128x512x16x1xf32 = util.global.load immutable @__hoisted_tensor_128x512x16x1xf32 : tensor<128x512x16x1xf32>
    %4 = tensor.empty() : tensor<16x128x16x16xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<16x128x16x16xf32>) -> tensor<16x128x16x16xf32>
    %6 = linalg.mmt4d ins(%pack, %__hoisted_tensor_128x512x16x1xf32 : tensor<16x512x16x1xf32>, tensor<128x512x16x1xf32>) outs(%5 : tensor<16x128x16x16xf32>) -> tensor<16x128x16x16xf32>
    %unpack = linalg.unpack %6 outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [16, 16] into %2 : tensor<16x128x16x16xf32> -> tensor<256x2048xf32>
    %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%unpack : tensor<256x2048xf32>) outs(%2 : tensor<256x2048xf32>) {
    ^bb0(%in: f32, %out: f32):
      %15 = arith.maximumf %in, %cst : f32
      linalg.yield %15 : f32
    } -> tensor<256x2048xf32>
    %8 = tensor.empty() : tensor<16x2048x16x1xf32>
    %pack_0 = linalg.pack %7 outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [16, 1] into %8 : tensor<256x2048xf32> -> tensor<16x2048x16x1xf32>
    %__hoisted_tensor_32x2048x16x1xf32 = util.global.load immutable @__hoisted_tensor_32x2048x16x1xf32 : tensor<32x2048x16x1xf32>
    %9 = tensor.empty() : tensor<16x32x16x16xf32>
    %10 = linalg.fill ins(%cst : f32) outs(%9 : tensor<16x32x16x16xf32>) -> tensor<16x32x16x16xf32>
    %11 = linalg.mmt4d ins(%pack_0, %__hoisted_tensor_32x2048x16x1xf32 : tensor<16x2048x16x1xf32>, tensor<32x2048x16x1xf32>) outs(%10 : tensor<16x32x16x16xf32>) -> tensor<16x32x16x16xf32>
    %12 = tensor.empty() : tensor<256x512xf32>
    %unpack_1 = linalg.unpack %11 outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [16, 16] into %12 : tensor<16x32x16x16xf32> -> tensor<256x512xf32>
    %13 = iree_tensor_ext.compute_barrier.end %unpack_1 : tensor<256x512xf32> -> tensor<256x512xf32>
    %14 = hal.tensor.export %13 "output0" : tensor<256x512xf32> -> !hal.buffer_view
    util.return %14 : !hal.buffer_view
  }
}