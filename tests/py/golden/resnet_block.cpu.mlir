module @resnet_block {
  func.func public @main(%x: tensor<1x32x32x16xf32> loc("x")) -> (tensor<1x16x16x32xf32> {jax.result_info = "out"}) {
    %w1 = stablehlo.constant dense<0.05000000074505806> : tensor<3x3x16x32xf32> loc("w1")
    %b1 = stablehlo.constant dense<0.10000000149011612> : tensor<32xf32> loc("b1")
    %w2 = stablehlo.constant dense<-0.019999999552965164> : tensor<3x3x32x32xf32> loc("w2")
    %b2 = stablehlo.constant dense<0.0> : tensor<32xf32> loc("b2")
    %wp = stablehlo.constant dense<0.30000001192092896> : tensor<1x1x16x32xf32> loc("wp")
    %conv1 = stablehlo.convolution(%x, %w1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x32x32x16xf32>, tensor<3x3x16x32xf32>) -> tensor<1x16x16x32xf32> loc("conv1")
    %bias1_bias = stablehlo.broadcast_in_dim %b1, dims = [3] : (tensor<32xf32>) -> tensor<1x16x16x32xf32> loc("bias1")
    %bias1 = stablehlo.add %conv1, %bias1_bias : tensor<1x16x16x32xf32> loc("bias1")
    %relu1_zero = stablehlo.constant dense<0.0> : tensor<f32> loc("relu1")
    %relu1_zeros = stablehlo.broadcast_in_dim %relu1_zero, dims = [] : (tensor<f32>) -> tensor<1x16x16x32xf32> loc("relu1")
    %relu1 = stablehlo.maximum %bias1, %relu1_zeros : tensor<1x16x16x32xf32> loc("relu1")
    %conv2.grown = stablehlo.convolution(%relu1, %w2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 2], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x16x16x32xf32>, tensor<3x3x32x32xf32>) -> tensor<1x17x16x32xf32> loc("conv2.grown")
    %conv2 = stablehlo.slice %conv2.grown [0:1, 0:16, 0:16, 0:32] : (tensor<1x17x16x32xf32>) -> tensor<1x16x16x32xf32> loc("conv2")
    %bias2_bias = stablehlo.broadcast_in_dim %b2, dims = [3] : (tensor<32xf32>) -> tensor<1x16x16x32xf32> loc("bias2")
    %bias2 = stablehlo.add %conv2, %bias2_bias : tensor<1x16x16x32xf32> loc("bias2")
    %proj.strided = stablehlo.slice %x [0:1, 0:32:2, 0:32:2, 0:16] : (tensor<1x32x32x16xf32>) -> tensor<1x16x16x16xf32> loc("proj.strided")
    %proj.matrix = stablehlo.reshape %wp : (tensor<1x1x16x32xf32>) -> tensor<16x32xf32> loc("proj.matrix")
    %proj = stablehlo.dot_general %proj.strided, %proj.matrix, contracting_dims = [3] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16x16x16xf32>, tensor<16x32xf32>) -> tensor<1x16x16x32xf32> loc("proj")
    %sum = stablehlo.add %bias2, %proj : tensor<1x16x16x32xf32> loc("sum")
    %out_zero = stablehlo.constant dense<0.0> : tensor<f32> loc("out")
    %out_zeros = stablehlo.broadcast_in_dim %out_zero, dims = [] : (tensor<f32>) -> tensor<1x16x16x32xf32> loc("out")
    %out = stablehlo.maximum %sum, %out_zeros : tensor<1x16x16x32xf32> loc("out")
    return %out : tensor<1x16x16x32xf32>
  }
}
