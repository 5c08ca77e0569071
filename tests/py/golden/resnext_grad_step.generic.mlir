module @resnext_grad_step {
  func.func public @main(%x: tensor<2x8x8x16xf32> loc("x"), %w: tensor<3x3x4x16xf32> loc("w"), %dy: tensor<2x4x4x16xf32> loc("dy")) -> (tensor<2x4x4x16xf32> {jax.result_info = "y"}, tensor<2x8x8x16xf32> {jax.result_info = "dx"}, tensor<3x3x4x16xf32> {jax.result_info = "dw"}, tensor<3x3x4x16xf32> {jax.result_info = "w_next"}) {
    %minus_lr = stablehlo.constant dense<-0.009999999776482582> : tensor<3x3x4x16xf32> loc("minus_lr")
    %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x8x8x16xf32>, tensor<3x3x4x16xf32>) -> tensor<2x4x4x16xf32> loc("y")
    %dx.kernel_reversed = stablehlo.reverse %w, dims = [0, 1] : tensor<3x3x4x16xf32> loc("dx.kernel_reversed")
    %dx.kernel_split = stablehlo.reshape %dx.kernel_reversed : (tensor<3x3x4x16xf32>) -> tensor<3x3x4x4x4xf32> loc("dx.kernel_split")
    %dx.kernel_moved = stablehlo.transpose %dx.kernel_split, dims = [0, 1, 3, 2, 4] : (tensor<3x3x4x4x4xf32>) -> tensor<3x3x4x4x4xf32> loc("dx.kernel_moved")
    %dx.kernel_grouped = stablehlo.reshape %dx.kernel_moved : (tensor<3x3x4x4x4xf32>) -> tensor<3x3x16x4xf32> loc("dx.kernel_grouped")
    %dx = stablehlo.convolution(%dy, %dx.kernel_grouped) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x4x16xf32>, tensor<3x3x16x4xf32>) -> tensor<2x8x8x16xf32> loc("dx")
    %dw = stablehlo.convolution(%x, %dy) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2]} {batch_group_count = 4 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x8x8x16xf32>, tensor<2x4x4x16xf32>) -> tensor<3x3x4x16xf32> loc("dw")
    %step = stablehlo.multiply %dw, %minus_lr : tensor<3x3x4x16xf32> loc("step")
    %w_next = stablehlo.add %w, %step : tensor<3x3x4x16xf32> loc("w_next")
    return %y, %dx, %dw, %w_next : tensor<2x4x4x16xf32>, tensor<2x8x8x16xf32>, tensor<3x3x4x16xf32>, tensor<3x3x4x16xf32>
  }
}
