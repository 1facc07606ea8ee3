// A BERT-like encoder layer in StableHLO (batch 1, 128 tokens, width 256, 4 heads, feed-forward 1024),
// as jax.jit(layer).lower(...).as_text() prints it: iree-compile's input in test_iree_import.py.
module @jit_layer attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x128x256xf32>, %arg1: tensor<256x256xf32>, %arg2: tensor<256x256xf32>, %arg3: tensor<256x256xf32>, %arg4: tensor<256x256xf32>, %arg5: tensor<256xf32>, %arg6: tensor<256xf32>, %arg7: tensor<256x1024xf32>, %arg8: tensor<1024x256xf32>, %arg9: tensor<256xf32>, %arg10: tensor<256xf32>) -> (tensor<1x128x256xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x256xf32>, tensor<256x256xf32>) -> tensor<1x128x256xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x128x256xf32>) -> tensor<1x128x4x64xf32>
    %2 = stablehlo.transpose %1, dims = [0, 2, 1, 3] : (tensor<1x128x4x64xf32>) -> tensor<1x4x128x64xf32>
    %3 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x256xf32>, tensor<256x256xf32>) -> tensor<1x128x256xf32>
    %4 = stablehlo.reshape %3 : (tensor<1x128x256xf32>) -> tensor<1x128x4x64xf32>
    %5 = stablehlo.transpose %4, dims = [0, 2, 1, 3] : (tensor<1x128x4x64xf32>) -> tensor<1x4x128x64xf32>
    %6 = stablehlo.dot_general %arg0, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x256xf32>, tensor<256x256xf32>) -> tensor<1x128x256xf32>
    %7 = stablehlo.reshape %6 : (tensor<1x128x256xf32>) -> tensor<1x128x4x64xf32>
    %8 = stablehlo.transpose %7, dims = [0, 2, 1, 3] : (tensor<1x128x4x64xf32>) -> tensor<1x4x128x64xf32>
    %9 = stablehlo.transpose %5, dims = [0, 1, 3, 2] : (tensor<1x4x128x64xf32>) -> tensor<1x4x64x128xf32>
    %10 = stablehlo.reshape %2 : (tensor<1x4x128x64xf32>) -> tensor<4x128x64xf32>
    %11 = stablehlo.reshape %9 : (tensor<1x4x64x128xf32>) -> tensor<4x64x128xf32>
    %12 = stablehlo.dot_general %10, %11, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x128x64xf32>, tensor<4x64x128xf32>) -> tensor<4x128x128xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [1, 2, 3] : (tensor<4x128x128xf32>) -> tensor<1x4x128x128xf32>
    %cst = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x4x128x128xf32>
    %15 = stablehlo.divide %13, %14 : tensor<1x4x128x128xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %16 = stablehlo.reduce(%15 init: %cst_0) applies stablehlo.maximum across dimensions = [3] : (tensor<1x4x128x128xf32>, tensor<f32>) -> tensor<1x4x128xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x4x128xf32>
    %18 = stablehlo.maximum %17, %16 : tensor<1x4x128xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<1x4x128xf32>) -> tensor<1x4x128x1xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0, 1, 2, 3] : (tensor<1x4x128x1xf32>) -> tensor<1x4x128x128xf32>
    %21 = stablehlo.subtract %15, %20 : tensor<1x4x128x128xf32>
    %22 = stablehlo.exponential %21 : tensor<1x4x128x128xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %23 = stablehlo.reduce(%22 init: %cst_2) applies stablehlo.add across dimensions = [3] : (tensor<1x4x128x128xf32>, tensor<f32>) -> tensor<1x4x128xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1, 2] : (tensor<1x4x128xf32>) -> tensor<1x4x128x1xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0, 1, 2, 3] : (tensor<1x4x128x1xf32>) -> tensor<1x4x128x128xf32>
    %26 = stablehlo.divide %22, %25 : tensor<1x4x128x128xf32>
    %27 = stablehlo.reshape %26 : (tensor<1x4x128x128xf32>) -> tensor<4x128x128xf32>
    %28 = stablehlo.reshape %8 : (tensor<1x4x128x64xf32>) -> tensor<4x128x64xf32>
    %29 = stablehlo.dot_general %27, %28, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x128x128xf32>, tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [1, 2, 3] : (tensor<4x128x64xf32>) -> tensor<1x4x128x64xf32>
    %31 = stablehlo.transpose %30, dims = [0, 2, 1, 3] : (tensor<1x4x128x64xf32>) -> tensor<1x128x4x64xf32>
    %32 = stablehlo.reshape %31 : (tensor<1x128x4x64xf32>) -> tensor<1x128x256xf32>
    %33 = stablehlo.dot_general %32, %arg4, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x256xf32>, tensor<256x256xf32>) -> tensor<1x128x256xf32>
    %34 = stablehlo.add %arg0, %33 : tensor<1x128x256xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %35 = stablehlo.reduce(%34 init: %cst_3) applies stablehlo.add across dimensions = [2] : (tensor<1x128x256xf32>, tensor<f32>) -> tensor<1x128xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0, 1] : (tensor<1x128xf32>) -> tensor<1x128x1xf32>
    %cst_4 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1x128x1xf32>
    %38 = stablehlo.divide %36, %37 : tensor<1x128x1xf32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2] : (tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %40 = stablehlo.subtract %34, %39 : tensor<1x128x256xf32>
    %41 = stablehlo.multiply %40, %40 : tensor<1x128x256xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %42 = stablehlo.reduce(%41 init: %cst_5) applies stablehlo.add across dimensions = [2] : (tensor<1x128x256xf32>, tensor<f32>) -> tensor<1x128xf32>
    %43 = stablehlo.broadcast_in_dim %42, dims = [0, 1] : (tensor<1x128xf32>) -> tensor<1x128x1xf32>
    %cst_6 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<1x128x1xf32>
    %45 = stablehlo.divide %43, %44 : tensor<1x128x1xf32>
    %46 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2] : (tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %47 = stablehlo.subtract %34, %46 : tensor<1x128x256xf32>
    %cst_7 = stablehlo.constant dense<9.99999996E-13> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<1x128x1xf32>
    %49 = stablehlo.add %45, %48 : tensor<1x128x1xf32>
    %50 = stablehlo.rsqrt %49 : tensor<1x128x1xf32>
    %51 = stablehlo.broadcast_in_dim %50, dims = [0, 1, 2] : (tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %52 = stablehlo.multiply %47, %51 : tensor<1x128x256xf32>
    %53 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<256xf32>) -> tensor<1x1x256xf32>
    %54 = stablehlo.broadcast_in_dim %53, dims = [0, 1, 2] : (tensor<1x1x256xf32>) -> tensor<1x128x256xf32>
    %55 = stablehlo.multiply %52, %54 : tensor<1x128x256xf32>
    %56 = stablehlo.broadcast_in_dim %arg6, dims = [2] : (tensor<256xf32>) -> tensor<1x1x256xf32>
    %57 = stablehlo.broadcast_in_dim %56, dims = [0, 1, 2] : (tensor<1x1x256xf32>) -> tensor<1x128x256xf32>
    %58 = stablehlo.add %55, %57 : tensor<1x128x256xf32>
    %59 = stablehlo.dot_general %58, %arg7, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x256xf32>, tensor<256x1024xf32>) -> tensor<1x128x1024xf32>
    %60 = stablehlo.multiply %59, %59 : tensor<1x128x1024xf32>
    %61 = stablehlo.multiply %60, %59 : tensor<1x128x1024xf32>
    %cst_8 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %62 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<1x128x1024xf32>
    %63 = stablehlo.multiply %62, %61 : tensor<1x128x1024xf32>
    %64 = stablehlo.add %59, %63 : tensor<1x128x1024xf32>
    %cst_9 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<1x128x1024xf32>
    %66 = stablehlo.multiply %65, %64 : tensor<1x128x1024xf32>
    %67 = stablehlo.tanh %66 : tensor<1x128x1024xf32>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %68 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<1x128x1024xf32>
    %69 = stablehlo.add %68, %67 : tensor<1x128x1024xf32>
    %cst_11 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<1x128x1024xf32>
    %71 = stablehlo.multiply %70, %69 : tensor<1x128x1024xf32>
    %72 = stablehlo.multiply %59, %71 : tensor<1x128x1024xf32>
    %73 = stablehlo.dot_general %72, %arg8, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x1024xf32>, tensor<1024x256xf32>) -> tensor<1x128x256xf32>
    %74 = stablehlo.add %58, %73 : tensor<1x128x256xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %75 = stablehlo.reduce(%74 init: %cst_12) applies stablehlo.add across dimensions = [2] : (tensor<1x128x256xf32>, tensor<f32>) -> tensor<1x128xf32>
    %76 = stablehlo.broadcast_in_dim %75, dims = [0, 1] : (tensor<1x128xf32>) -> tensor<1x128x1xf32>
    %cst_13 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %77 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<1x128x1xf32>
    %78 = stablehlo.divide %76, %77 : tensor<1x128x1xf32>
    %79 = stablehlo.broadcast_in_dim %78, dims = [0, 1, 2] : (tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %80 = stablehlo.subtract %74, %79 : tensor<1x128x256xf32>
    %81 = stablehlo.multiply %80, %80 : tensor<1x128x256xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %82 = stablehlo.reduce(%81 init: %cst_14) applies stablehlo.add across dimensions = [2] : (tensor<1x128x256xf32>, tensor<f32>) -> tensor<1x128xf32>
    %83 = stablehlo.broadcast_in_dim %82, dims = [0, 1] : (tensor<1x128xf32>) -> tensor<1x128x1xf32>
    %cst_15 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %84 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<1x128x1xf32>
    %85 = stablehlo.divide %83, %84 : tensor<1x128x1xf32>
    %86 = stablehlo.broadcast_in_dim %78, dims = [0, 1, 2] : (tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %87 = stablehlo.subtract %74, %86 : tensor<1x128x256xf32>
    %cst_16 = stablehlo.constant dense<9.99999996E-13> : tensor<f32>
    %88 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<1x128x1xf32>
    %89 = stablehlo.add %85, %88 : tensor<1x128x1xf32>
    %90 = stablehlo.rsqrt %89 : tensor<1x128x1xf32>
    %91 = stablehlo.broadcast_in_dim %90, dims = [0, 1, 2] : (tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %92 = stablehlo.multiply %87, %91 : tensor<1x128x256xf32>
    %93 = stablehlo.broadcast_in_dim %arg9, dims = [2] : (tensor<256xf32>) -> tensor<1x1x256xf32>
    %94 = stablehlo.broadcast_in_dim %93, dims = [0, 1, 2] : (tensor<1x1x256xf32>) -> tensor<1x128x256xf32>
    %95 = stablehlo.multiply %92, %94 : tensor<1x128x256xf32>
    %96 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<256xf32>) -> tensor<1x1x256xf32>
    %97 = stablehlo.broadcast_in_dim %96, dims = [0, 1, 2] : (tensor<1x1x256xf32>) -> tensor<1x128x256xf32>
    %98 = stablehlo.add %95, %97 : tensor<1x128x256xf32>
    return %98 : tensor<1x128x256xf32>
  }
}

