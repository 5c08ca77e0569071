// RUN: not convc-opt %s --split-input-file -p lower-conv-backprop-filter 2>/dev/null | filecheck %s
// RUN: not convc-opt %s --split-input-file -p infer-shapes,lower-conv-transpose,lower-conv-backprop-input,lower-conv-backprop-filter,canonicalize-dimension-numbers,resolve-padding,dce --emit=stablehlo 2>/dev/null | filecheck %s --check-prefix=HLO
// RUN: not convc-opt %s --split-input-file -p lower-conv-backprop-filter 2>&1 >/dev/null | filecheck %s --check-prefix=ERR

// conv_backprop_filter(lhs, out_grad) with the forward conv's attributes and kernel_shape
// becomes one conv: lhs with its batch and feature roles swapped (dimension numbers only, no
// transpose), out_grad as the kernel (its batch dim is the contracted one), window_strides =
// forward rhs_dilation, rhs_dilation = forward window_strides, lhs_dilation kept, pads
// (lo, dilate(out, stride) - dilate(in, lhs_dilation) + k - 1 - lo); feature groups become
// batch groups and batch groups feature groups; the result's dimension numbers are the
// forward kernel's with its roles swapped, so it lands in the kernel layout as is.
// The last chunks are the op's diagnostics (the `not` above: they fail on purpose).

// NCHW/OIHW, stride 2, VALID, 7 -> 3: rhs_dilation 2, pads (0, 5 - 7 + 2 - 0) = (0, 0).
// CHECK-LABEL: module @strided
// CHECK-NOT: convc.transpose
// CHECK: %dw = "convc.conv"(%x, %g)
// CHECK-SAME: dimension_numbers = #convc.dims<[f, b, 0, 1]x[i, o, 0, 1]->[f, b, 0, 1]>
// CHECK-SAME: lhs_dilation = array<i64: 1, 1>
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]>
// CHECK-SAME: rhs_dilation = array<i64: 2, 2>
// CHECK-SAME: window_strides = array<i64: 1, 1>
// CHECK-SAME: -> tensor<4x3x3x3xf32>
// CHECK-NOT: convc.conv_backprop_filter
// HLO-LABEL: module @strided
// HLO: stablehlo.convolution(%x, %g) dim_numbers = [f, b, 0, 1]x[i, o, 0, 1]->[f, b, 0, 1]
// HLO-SAME: window = {stride = [1, 1], pad = {{\[\[}}0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [2, 2]}
// HLO-SAME: batch_group_count = 1 : i64, feature_group_count = 1 : i64
module @strided {
  func.func @main(%x: tensor<2x3x7x7xf32>, %g: tensor<2x4x3x3xf32>) -> tensor<4x3x3x3xf32> {
    %dw = "convc.conv_backprop_filter"(%x, %g) {kernel_shape = array<i64: 4, 3, 3, 3>, window_strides = array<i64: 2, 2>} : (tensor<2x3x7x7xf32>, tensor<2x4x3x3xf32>) -> tensor<4x3x3x3xf32>
    func.return %dw : tensor<4x3x3x3xf32>
  }
}

// -----

// Feature groups (a ResNeXt-style grouped conv, G = 2) become batch_group_count = 2.
// CHECK-LABEL: module @feature_groups
// CHECK: "convc.conv"(%x, %g)
// CHECK-SAME: batch_group_count = 2 : i64
// CHECK-NOT: feature_group_count
// CHECK-SAME: -> tensor<4x3x3x3xf32>
// HLO-LABEL: module @feature_groups
// HLO: stablehlo.convolution(%x, %g)
// HLO-SAME: batch_group_count = 2 : i64, feature_group_count = 1 : i64
module @feature_groups {
  func.func @main(%x: tensor<2x6x5x5xf32>, %g: tensor<2x4x3x3xf32>) -> tensor<4x3x3x3xf32> {
    %dw = "convc.conv_backprop_filter"(%x, %g) {feature_group_count = 2 : i64, kernel_shape = array<i64: 4, 3, 3, 3>} : (tensor<2x6x5x5xf32>, tensor<2x4x3x3xf32>) -> tensor<4x3x3x3xf32>
    func.return %dw : tensor<4x3x3x3xf32>
  }
}

// -----

// Depthwise with channel multiplier 2 in NHWC/HWIO, SAME: 3 feature groups become 3 batch
// groups; the result lands in HWIO ([0, 1, b, f]: batch role = I, feature role = O).
// CHECK-LABEL: module @depthwise_multiplier
// CHECK: "convc.conv"(%x, %g)
// CHECK-SAME: batch_group_count = 3 : i64
// CHECK-SAME: dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]>
// CHECK-SAME: -> tensor<3x3x1x6xf32>
// HLO-LABEL: module @depthwise_multiplier
// HLO: dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]
// HLO-SAME: batch_group_count = 3 : i64
module @depthwise_multiplier {
  func.func @main(%x: tensor<2x5x5x3xf32>, %g: tensor<2x5x5x6xf32>) -> tensor<3x3x1x6xf32> {
    %dw = "convc.conv_backprop_filter"(%x, %g) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], feature_group_count = 3 : i64, kernel_shape = array<i64: 3, 3, 1, 6>, padding = "SAME"} : (tensor<2x5x5x3xf32>, tensor<2x5x5x6xf32>) -> tensor<3x3x1x6xf32>
    func.return %dw : tensor<3x3x1x6xf32>
  }
}

// -----

// Batch groups (G = 2) become feature_group_count = 2.
// CHECK-LABEL: module @batch_groups
// CHECK: "convc.conv"(%x, %g)
// CHECK-NOT: batch_group_count
// CHECK-SAME: feature_group_count = 2 : i64
// CHECK-SAME: -> tensor<4x3x2x2xf32>
module @batch_groups {
  func.func @main(%x: tensor<4x3x4x4xf32>, %g: tensor<2x4x3x3xf32>) -> tensor<4x3x2x2xf32> {
    %dw = "convc.conv_backprop_filter"(%x, %g) {batch_group_count = 2 : i64, kernel_shape = array<i64: 4, 3, 2, 2>} : (tensor<4x3x4x4xf32>, tensor<2x4x3x3xf32>) -> tensor<4x3x2x2xf32>
    func.return %dw : tensor<4x3x2x2xf32>
  }
}

// -----

// Stride 2, both dilations 2, negative asymmetric pads (-1, 2): the window becomes out_grad
// dilated by the stride, strided by the kernel dilation; pads (-1, 9 - 11 + 3 - 1 + 1) = (-1, 1).
// CHECK-LABEL: module @dilations_negative_pads
// CHECK: "convc.conv"(%x, %g)
// CHECK-SAME: lhs_dilation = array<i64: 2>
// CHECK-SAME: padding = dense<{{\[\[}}-1, 1]]>
// CHECK-SAME: rhs_dilation = array<i64: 2>
// CHECK-SAME: window_strides = array<i64: 2>
// CHECK-SAME: -> tensor<3x2x2xf32>
// HLO-LABEL: module @dilations_negative_pads
// HLO: window = {stride = [2], pad = {{\[\[}}-1, 1]], lhs_dilate = [2], rhs_dilate = [2]}
module @dilations_negative_pads {
  func.func @main(%x: tensor<1x2x6xf32>, %g: tensor<1x3x5xf32>) -> tensor<3x2x2xf32> {
    %dw = "convc.conv_backprop_filter"(%x, %g) {kernel_shape = array<i64: 3, 2, 2>, lhs_dilation = array<i64: 2>, padding = dense<[[-1, 2]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 2>, window_strides = array<i64: 2>} : (tensor<1x2x6xf32>, tensor<1x3x5xf32>) -> tensor<3x2x2xf32>
    func.return %dw : tensor<3x2x2xf32>
  }
}

// -----

// Quantized operands: out_grad is the lowered conv's kernel, per axis along its features (that
// conv's output features); the per-axis result is the kernel gradient along its output features.
// CHECK-LABEL: module @quantized_kernel_gradient
// CHECK: %dw = "convc.conv"(%x, %g)
// CHECK-SAME: dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>
// CHECK-SAME: preferred_element_type = "!quant.uniform<i8:f32:3, {2.000000e+00,4.000000e+00,1.000000e+00,2.000000e+00:5}>"
// CHECK-SAME: rhs_dilation = array<i64: 2, 2>
// CHECK-SAME: (tensor<2x6x6x2x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<2x3x3x4x!quant.uniform<i8:f32:3, {2.500000e-01:1,5.000000e-01,1.250000e-01:-1,2.500000e-01}>>)
// CHECK-SAME: -> tensor<3x3x2x4x!quant.uniform<i8:f32:3, {2.000000e+00,4.000000e+00,1.000000e+00,2.000000e+00:5}>>
// HLO-LABEL: module @quantized_kernel_gradient
// HLO: stablehlo.convolution(%x, %g) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]
// HLO-SAME: rhs_dilate = [2, 2]
// HLO-SAME: -> tensor<3x3x2x4x!quant.uniform<i8:f32:3, {2.000000e+00,4.000000e+00,1.000000e+00,2.000000e+00:5}>>
module @quantized_kernel_gradient {
  func.func @main(%x: tensor<2x6x6x2x!quant.uniform<i8:f32, 0.5:-3>>, %g: tensor<2x3x3x4x!quant.uniform<i8:f32:3, {0.25:1, 0.5, 0.125:-1, 0.25}>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32:3, {2.0, 4.0, 1.0, 2.0:5}>> {
    %dw = "convc.conv_backprop_filter"(%x, %g) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], kernel_shape = array<i64: 3, 3, 2, 4>, padding = "SAME", window_strides = array<i64: 2, 2>, preferred_element_type = "!quant.uniform<i8:f32:3, {2.0, 4.0, 1.0, 2.0:5}>"} : (tensor<2x6x6x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x3x3x4x!quant.uniform<i8:f32:3, {0.25:1, 0.5, 0.125:-1, 0.25}>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32:3, {2.0, 4.0, 1.0, 2.0:5}>>
    func.return %dw : tensor<3x3x2x4x!quant.uniform<i8:f32:3, {2.0, 4.0, 1.0, 2.0:5}>>
  }
}

// -----

// ERR: lower-conv-backprop-filter.mlir:{{[0-9]+}}:5: error: 'f1' (conv_backprop_filter): kernel_shape [4, 3, 3] has 3 dimensions, the operands have rank 4 [F1]
module @kernel_shape_rank {
  func.func @main(%x: tensor<2x3x7x7xf32>, %g: tensor<2x4x5x5xf32>) -> tensor<4x3x3xf32> {
    %f1 = "convc.conv_backprop_filter"(%x, %g) {kernel_shape = array<i64: 4, 3, 3>} : (tensor<2x3x7x7xf32>, tensor<2x4x5x5xf32>) -> tensor<4x3x3xf32>
    func.return %f1 : tensor<4x3x3xf32>
  }
}

// -----

// ERR: lower-conv-backprop-filter.mlir:{{[0-9]+}}:5: error: 'f2' (conv_backprop_filter): out_grad feature dimension 4 differs from the 5 the forward conv produces with this kernel_shape [F2]
module @out_grad_features {
  func.func @main(%x: tensor<2x3x7x7xf32>, %g: tensor<2x4x5x5xf32>) -> tensor<5x3x3x3xf32> {
    %f2 = "convc.conv_backprop_filter"(%x, %g) {kernel_shape = array<i64: 5, 3, 3, 3>} : (tensor<2x3x7x7xf32>, tensor<2x4x5x5xf32>) -> tensor<5x3x3x3xf32>
    func.return %f2 : tensor<5x3x3x3xf32>
  }
}

// -----

// ERR: lower-conv-backprop-filter.mlir:{{[0-9]+}}:5: error: 'f3' (conv_backprop_filter): Size of out_backprop doesn't match computed: actual = 4, computed = 5 (spatial dimension 1: input size 7, kernel_shape size 3, stride 1, pads (0, 0)) [F3]
module @out_grad_size {
  func.func @main(%x: tensor<2x3x7x7xf32>, %g: tensor<2x4x5x4xf32>) -> tensor<4x3x3x3xf32> {
    %f3 = "convc.conv_backprop_filter"(%x, %g) {kernel_shape = array<i64: 4, 3, 3, 3>} : (tensor<2x3x7x7xf32>, tensor<2x4x5x4xf32>) -> tensor<4x3x3x3xf32>
    func.return %f3 : tensor<4x3x3x3xf32>
  }
}

// -----

// The forward conv's own constraints still apply, located at kernel_shape.
// ERR: lower-conv-backprop-filter.mlir:{{[0-9]+}}:5: error: 'c14' (conv_backprop_filter): rhs input feature dimension 2 must equal lhs feature dimension 3 / feature_group_count 1 = 3 [C14]
module @kernel_input_features {
  func.func @main(%x: tensor<2x3x7x7xf32>, %g: tensor<2x4x5x5xf32>) -> tensor<4x2x3x3xf32> {
    %c14 = "convc.conv_backprop_filter"(%x, %g) {kernel_shape = array<i64: 4, 2, 3, 3>} : (tensor<2x3x7x7xf32>, tensor<2x4x5x5xf32>) -> tensor<4x2x3x3xf32>
    func.return %c14 : tensor<4x2x3x3xf32>
  }
}

// -----

// ERR: lower-conv-backprop-filter.mlir:{{[0-9]+}}:5: error: 'f4' (conv_backprop_filter): a per-axis quantized out_grad is quantized along its feature dimension 3, not 2: it is the kernel of the kernel gradient's conv, and the spec quantizes a per-axis kernel along that conv's output features (C29), which are out_grad's features [F4]
module @per_axis_out_grad_off_its_features {
  func.func @main(%x: tensor<2x6x6x2x!quant.uniform<i8:f32, 0.5>>, %g: tensor<2x3x3x4x!quant.uniform<i8:f32:2, {0.25, 0.5, 0.25}>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32, 2.0>> {
    %f4 = "convc.conv_backprop_filter"(%x, %g) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], kernel_shape = array<i64: 3, 3, 2, 4>, padding = "SAME", window_strides = array<i64: 2, 2>, preferred_element_type = "!quant.uniform<i8:f32, 2.0>"} : (tensor<2x6x6x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x3x3x4x!quant.uniform<i8:f32:2, {0.25, 0.5, 0.25}>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32, 2.0>>
    func.return %f4 : tensor<3x3x2x4x!quant.uniform<i8:f32, 2.0>>
  }
}

// -----

// The lowered conv's own quantized rules say which operand plays which role there.
// ERR: lower-conv-backprop-filter.mlir:{{[0-9]+}}:5: error: 'c30' (conv_backprop_filter): a per-axis result is quantized along its feature dimension 3, not 2 (in the conv it lowers to: lhs is this lhs, rhs is out_grad, and the result's features are the kernel's output features) [C30]
module @per_axis_result_off_the_output_features {
  func.func @main(%x: tensor<2x6x6x2x!quant.uniform<i8:f32, 0.5>>, %g: tensor<2x3x3x4x!quant.uniform<i8:f32:3, {0.25, 0.5, 0.25, 0.5}>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32:2, {2.0, 1.0}>> {
    %c30 = "convc.conv_backprop_filter"(%x, %g) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], kernel_shape = array<i64: 3, 3, 2, 4>, padding = "SAME", window_strides = array<i64: 2, 2>, preferred_element_type = "!quant.uniform<i8:f32:2, {2.0, 1.0}>"} : (tensor<2x6x6x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x3x3x4x!quant.uniform<i8:f32:3, {0.25, 0.5, 0.25, 0.5}>>) -> tensor<3x3x2x4x!quant.uniform<i8:f32:2, {2.0, 1.0}>>
    func.return %c30 : tensor<3x3x2x4x!quant.uniform<i8:f32:2, {2.0, 1.0}>>
  }
}
