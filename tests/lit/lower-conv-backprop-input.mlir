// RUN: not convc-opt %s --split-input-file -p lower-conv-backprop-input 2>/dev/null | filecheck %s
// RUN: not convc-opt %s --split-input-file -p infer-shapes,lower-conv-transpose,lower-conv-backprop-input,lower-conv-backprop-filter,canonicalize-dimension-numbers,resolve-padding,dce --emit=stablehlo 2>/dev/null | filecheck %s --check-prefix=HLO
// RUN: not convc-opt %s --split-input-file -p lower-conv-backprop-input 2>&1 >/dev/null | filecheck %s --check-prefix=ERR

// conv_backprop_input(out_grad, rhs) with the forward conv's attributes becomes a conv of
// out_grad over reverse(rhs, spatial dims) with the kernel's I/O roles swapped:
// lhs_dilation = forward window_strides, window_strides = forward lhs_dilation, rhs_dilation
// kept, pads (k - 1 - lo, whatever reaches the requested size) with k the dilated kernel:
// hi = dilate(size, lhs_dilation) + k - 1 - dilate(out, stride) - (k - 1 - lo).
// The last chunks are the op's diagnostics (the `not` above: they fail on purpose).

// PyTorch conv_transpose2d(stride 2, padding 1, output_padding 1), NCHW/OIHW: size
// (4 - 1) * 2 - 2 + 3 + 1 = 8; pads (3 - 1 - 1, 8 + 2 - 7 - 1) = (1, 2).
// CHECK-LABEL: module @pytorch_output_padding
// CHECK: %[[REV:.*]] = "convc.reverse"(%w) {dimensions = array<i64: 2, 3>}
// CHECK: %dx = "convc.conv"(%g, %[[REV]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, f, 0, 1]x[i, o, 0, 1]->[b, f, 0, 1]>
// CHECK-SAME: lhs_dilation = array<i64: 2, 2>
// CHECK-SAME: padding = dense<{{\[\[}}1, 2], [1, 2]]>
// CHECK-SAME: window_strides = array<i64: 1, 1>
// CHECK-SAME: -> tensor<1x3x8x8xf32>
// CHECK-NOT: convc.conv_backprop_input
// HLO-LABEL: module @pytorch_output_padding
// HLO: %[[REV:.*]] = stablehlo.reverse %w, dims = [2, 3]
// HLO: stablehlo.convolution(%g, %[[REV]]) dim_numbers = [b, f, 0, 1]x[i, o, 0, 1]->[b, f, 0, 1]
// HLO-SAME: window = {stride = [1, 1], pad = {{\[\[}}1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]}
module @pytorch_output_padding {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
    %dx = "convc.conv_backprop_input"(%g, %w) {output_padding = array<i64: 1, 1>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
    func.return %dx : tensor<1x3x8x8xf32>
  }
}

// -----

// TF Conv2DBackpropInput, SAME, stride 2: both 7 and 8 map to 4, so input_shape picks.
// 7: forward pads (1, 1) -> (1, 7 + 2 - 7 - 1) = (1, 1); 8: forward pads (0, 1) -> (2, 1).
// CHECK-LABEL: module @tf_input_shape
// CHECK: %dx7 = "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]>
// CHECK-SAME: -> tensor<1x7x7x3xf32>
// CHECK: %dx8 = "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}2, 1], [2, 1]]>
// CHECK-SAME: -> tensor<1x8x8x3xf32>
// HLO-LABEL: module @tf_input_shape
// HLO: stablehlo.convolution{{.*}}pad = {{\[\[}}1, 1], [1, 1]], lhs_dilate = [2, 2]{{.*}} -> tensor<1x7x7x3xf32>
// HLO: stablehlo.convolution{{.*}}pad = {{\[\[}}2, 1], [2, 1]], lhs_dilate = [2, 2]{{.*}} -> tensor<1x8x8x3xf32>
module @tf_input_shape {
  func.func @main(%g: tensor<1x4x4x5xf32>, %w: tensor<3x3x3x5xf32>) -> (tensor<1x7x7x3xf32>, tensor<1x8x8x3xf32>) {
    %dx7 = "convc.conv_backprop_input"(%g, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], input_shape = array<i64: 1, 7, 7, 3>, padding = "SAME", window_strides = array<i64: 2, 2>} : (tensor<1x4x4x5xf32>, tensor<3x3x3x5xf32>) -> tensor<1x7x7x3xf32>
    %dx8 = "convc.conv_backprop_input"(%g, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], input_shape = array<i64: 1, 8, 8, 3>, padding = "SAME", window_strides = array<i64: 2, 2>} : (tensor<1x4x4x5xf32>, tensor<3x3x3x5xf32>) -> tensor<1x8x8x3xf32>
    func.return %dx7, %dx8 : tensor<1x7x7x3xf32>, tensor<1x8x8x3xf32>
  }
}

// -----

// Negative, asymmetric pads with both dilations: kernel 2 dilated by 2 is 3; forward pads
// (-1, 2), lhs_dilation 2: the result spans (5 - 1) + 3 + 1 - 2 = 6 dilated positions, i.e.
// 3 inputs; pads (3 - 1 + 1, 5 + 2 - 5 - 3) = (3, -1); the forward lhs_dilation becomes the
// window stride.
// CHECK-LABEL: module @negative_pads_dilations
// CHECK: "convc.conv"
// CHECK-SAME: lhs_dilation = array<i64: 1>
// CHECK-SAME: padding = dense<{{\[\[}}3, -1]]>
// CHECK-SAME: rhs_dilation = array<i64: 2>
// CHECK-SAME: window_strides = array<i64: 2>
// CHECK-SAME: -> tensor<1x2x3xf32>
// HLO-LABEL: module @negative_pads_dilations
// HLO: window = {stride = [2], pad = {{\[\[}}3, -1]], lhs_dilate = [1], rhs_dilate = [2]}
module @negative_pads_dilations {
  func.func @main(%g: tensor<1x2x5xf32>, %w: tensor<2x2x2xf32>) -> tensor<1x2x3xf32> {
    %dx = "convc.conv_backprop_input"(%g, %w) {lhs_dilation = array<i64: 2>, padding = dense<[[-1, 2]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 2>} : (tensor<1x2x5xf32>, tensor<2x2x2xf32>) -> tensor<1x2x3xf32>
    func.return %dx : tensor<1x2x3xf32>
  }
}

// -----

// Feature groups (G = 2): the kernel's O dim (4) splits into (2, 2) and the group axis moves
// into its I dim (3 -> 6), group-major; the conv keeps feature_group_count = 2.
// CHECK-LABEL: module @feature_groups
// CHECK: %[[REV:.*]] = "convc.reverse"(%w) {dimensions = array<i64: 2, 3>}
// CHECK: %[[SPLIT:.*]] = "convc.reshape"(%[[REV]]) {new_sizes = array<i64: 2, 2, 3, 3, 3>}
// CHECK: %[[MOVED:.*]] = "convc.transpose"(%[[SPLIT]]) {permutation = array<i64: 1, 0, 2, 3, 4>}
// CHECK: %[[KERNEL:.*]] = "convc.reshape"(%[[MOVED]]) {new_sizes = array<i64: 2, 6, 3, 3>}
// CHECK: %dx = "convc.conv"(%g, %[[KERNEL]])
// CHECK-SAME: feature_group_count = 2 : i64
// CHECK-SAME: -> tensor<1x6x9x9xf32>
// HLO-LABEL: module @feature_groups
// HLO: stablehlo.reverse
// HLO: stablehlo.convolution
// HLO-SAME: batch_group_count = 1 : i64, feature_group_count = 2 : i64
module @feature_groups {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x9x9xf32> {
    %dx = "convc.conv_backprop_input"(%g, %w) {feature_group_count = 2 : i64, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x9x9xf32>
    func.return %dx : tensor<1x6x9x9xf32>
  }
}

// -----

// Depthwise with channel multiplier 2 (TF DepthwiseConv2dNativeBackpropInput): 3 groups,
// HWIO kernel 3x3x1x6: O = 6 splits into (3, 2), the group axis moves into I (1 -> 3).
// CHECK-LABEL: module @depthwise_multiplier
// CHECK: "convc.reshape"({{.*}}) {new_sizes = array<i64: 3, 3, 1, 3, 2>}
// CHECK: "convc.transpose"({{.*}}) {permutation = array<i64: 0, 1, 3, 2, 4>}
// CHECK: "convc.reshape"({{.*}}) {new_sizes = array<i64: 3, 3, 3, 2>}
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]>
// CHECK-SAME: feature_group_count = 3 : i64
// CHECK-SAME: -> tensor<2x5x5x3xf32>
module @depthwise_multiplier {
  func.func @main(%g: tensor<2x5x5x6xf32>, %w: tensor<3x3x1x6xf32>) -> tensor<2x5x5x3xf32> {
    %dx = "convc.conv_backprop_input"(%g, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], feature_group_count = 3 : i64, padding = "SAME"} : (tensor<2x5x5x6xf32>, tensor<3x3x1x6xf32>) -> tensor<2x5x5x3xf32>
    func.return %dx : tensor<2x5x5x3xf32>
  }
}

// -----

// Batch groups (G = 2), as JAX: the kernel moves its group axis O -> I, the conv runs with
// feature_group_count = 2 and its result's group axis moves from the features into the batch.
// CHECK-LABEL: module @batch_groups
// CHECK: "convc.reshape"({{.*}}) {new_sizes = array<i64: 2, 2, 3, 2, 2>}
// CHECK: "convc.reshape"({{.*}}) {new_sizes = array<i64: 2, 6, 2, 2>}
// CHECK: %[[CONV:.*]] = "convc.conv"
// CHECK-SAME: feature_group_count = 2 : i64
// CHECK-SAME: -> tensor<1x6x4x4xf32>
// CHECK: %[[SPLIT:.*]] = "convc.reshape"(%[[CONV]]) {new_sizes = array<i64: 1, 2, 3, 4, 4>}
// CHECK: %[[MOVED:.*]] = "convc.transpose"(%[[SPLIT]]) {permutation = array<i64: 1, 0, 2, 3, 4>}
// CHECK: %dx = "convc.reshape"(%[[MOVED]]) {new_sizes = array<i64: 2, 3, 4, 4>}
module @batch_groups {
  func.func @main(%g: tensor<1x4x3x3xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<2x3x4x4xf32> {
    %dx = "convc.conv_backprop_input"(%g, %w) {batch_group_count = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<4x3x2x2xf32>) -> tensor<2x3x4x4xf32>
    func.return %dx : tensor<2x3x4x4xf32>
  }
}

// -----

// Quantized operands (the spec's quantized convolution takes lhs_dilation): the lowered conv
// keeps the quantized types; its kernel is the per-tensor quantized kernel reversed.
// CHECK-LABEL: module @quantized_input_gradient
// CHECK: %[[REV:[^ ]+]] = "convc.reverse"(%w) {dimensions = array<i64: 0, 1>} : (tensor<3x3x2x4x!quant.uniform<i8:f32, 2.500000e-01:1>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32, 2.500000e-01:1>>
// CHECK: %dx = "convc.conv"(%g, %[[REV]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]>, lhs_dilation = array<i64: 2, 2>
// CHECK-SAME: preferred_element_type = "!quant.uniform<i8:f32, 2.000000e+00>"
// CHECK-SAME: -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.000000e+00>>
// HLO-LABEL: module @quantized_input_gradient
// HLO: %[[REV:[^ ]+]] = stablehlo.reverse %w, dims = [0, 1] : tensor<3x3x2x4x!quant.uniform<i8:f32, 2.500000e-01:1>>
// HLO: stablehlo.convolution(%g, %[[REV]])
// HLO-SAME: lhs_dilate = [2, 2]
// HLO-SAME: -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.000000e+00>>
module @quantized_input_gradient {
  func.func @main(%g: tensor<1x3x3x4x!quant.uniform<i8:f32, 0.5:-3>>, %w: tensor<3x3x2x4x!quant.uniform<i8:f32, 0.25:1>>) -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0:0>> {
    %dx = "convc.conv_backprop_input"(%g, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], input_shape = array<i64: 1, 6, 6, 2>, padding = "SAME", window_strides = array<i64: 2, 2>, preferred_element_type = "!quant.uniform<i8:f32, 2.0:0>"} : (tensor<1x3x3x4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x3x2x4x!quant.uniform<i8:f32, 0.25:1>>) -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0:0>>
    func.return %dx : tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0:0>>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b1' (conv_backprop_input): out_grad feature dimension 5 differs from the 4 the forward conv produces [B1]
module @out_grad_features {
  func.func @main(%g: tensor<1x5x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x6x6xf32> {
    %b1 = "convc.conv_backprop_input"(%g, %w) : (tensor<1x5x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x6x6xf32>
    func.return %b1 : tensor<1x3x6x6xf32>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b2' (conv_backprop_input): give input_shape or output_padding, not both [B2]
module @both_sizes {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x9x9xf32> {
    %b2 = "convc.conv_backprop_input"(%g, %w) {input_shape = array<i64: 1, 3, 9, 9>, output_padding = array<i64: 0, 0>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x9x9xf32>
    func.return %b2 : tensor<1x3x9x9xf32>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b3' (conv_backprop_input): input_shape [3, 9, 9] has 3 dimensions, the operands have rank 4 [B3]
module @input_shape_rank {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x9x9xf32> {
    %b3 = "convc.conv_backprop_input"(%g, %w) {input_shape = array<i64: 3, 9, 9>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x9x9xf32>
    func.return %b3 : tensor<1x3x9x9xf32>
  }
}

// -----

// Stride 2, VALID, kernel 3: 9 and 10 map to 4, 11 maps to 5.
// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b4' (conv_backprop_input): Size of out_backprop doesn't match computed: actual = 4, computed = 5 (spatial dimension 0: input_shape size 11, kernel 3, stride 2, pads (0, 0)) [B4]
module @input_shape_mismatch {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x11x9xf32> {
    %b4 = "convc.conv_backprop_input"(%g, %w) {input_shape = array<i64: 1, 3, 11, 9>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x11x9xf32>
    func.return %b4 : tensor<1x3x11x9xf32>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b5' (conv_backprop_input): output_padding has 1 entries, expected 2 (one per spatial dimension) [B5]
module @output_padding_count {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x10x10xf32> {
    %b5 = "convc.conv_backprop_input"(%g, %w) {output_padding = array<i64: 1>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x10x10xf32>
    func.return %b5 : tensor<1x3x10x10xf32>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b6' (conv_backprop_input): output_padding 2 for spatial dimension 1 must be in [0, max(stride 2, dilation 1) = 2) [B6]
module @output_padding_range {
  func.func @main(%g: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x10x11xf32> {
    %b6 = "convc.conv_backprop_input"(%g, %w) {output_padding = array<i64: 1, 2>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x10x11xf32>
    func.return %b6 : tensor<1x3x10x11xf32>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b7' (conv_backprop_input): the result's spatial dimension 0 would have size -3: (out 1 - 1) * stride 1 + window 3 - pads (3, 3) + output_padding 0 [B7]
module @empty_result {
  func.func @main(%g: tensor<1x4x1xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x3x1xf32> {
    %b7 = "convc.conv_backprop_input"(%g, %w) {padding = dense<[[3, 3]]> : tensor<1x2xi64>} : (tensor<1x4x1xf32>, tensor<4x3x3xf32>) -> tensor<1x3x1xf32>
    func.return %b7 : tensor<1x3x1xf32>
  }
}

// -----

// ERR: lower-conv-backprop-input.mlir:{{[0-9]+}}:5: error: 'b8' (conv_backprop_input): a per-axis quantized kernel cannot be used: the input gradient's conv takes this kernel spatially reversed, with its input and output features swapped, and StableHLO takes a per-axis kernel only along a conv's output features (C29) and never reversed (reverse.I1); quantize the kernel per tensor [B8]
module @per_axis_kernel {
  func.func @main(%g: tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x3x2x2x!quant.uniform<i8:f32:3, {0.5, 0.25}>>) -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0>> {
    %b8 = "convc.conv_backprop_input"(%g, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], input_shape = array<i64: 1, 6, 6, 2>, padding = "SAME", window_strides = array<i64: 2, 2>, preferred_element_type = "!quant.uniform<i8:f32, 2.0>"} : (tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x3x2x2x!quant.uniform<i8:f32:3, {0.5, 0.25}>>) -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0>>
    func.return %b8 : tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0>>
  }
}
