// RUN: not convc-opt %s --split-input-file -p lower-conv-transpose 2>/dev/null | filecheck %s
// RUN: not convc-opt %s --split-input-file -p infer-shapes,lower-conv-transpose,lower-conv-backprop-input,lower-conv-backprop-filter,canonicalize-dimension-numbers,resolve-padding,dce --emit=stablehlo 2>/dev/null | filecheck %s --check-prefix=HLO
// RUN: not convc-opt %s --split-input-file -p lower-conv-transpose 2>&1 >/dev/null | filecheck %s --check-prefix=ERR

// conv_transpose (jax.lax.conv_transpose plus feature_group_count) becomes a plain conv:
// lhs_dilation = strides, unit window strides, the pads lax's _conv_transpose_padding gives
// on the dilated kernel k (SAME: k + s - 2 in all, ceil half low unless s > k - 1, then
// k - 1 low; VALID: k - 1 low, k + s - 2 + max(k - s, 0) in all), explicit pads as given.
// The last chunks are the op's diagnostics (the `not` above: they fail on purpose).

// SAME, stride 2, 3x3 kernel, default NHWC/HWIO: pads (2, 1), 4 -> 8. No reverse.
// CHECK-LABEL: module @same_stride2
// CHECK-NOT: convc.reverse
// CHECK: %y = "convc.conv"(%x, %w)
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// CHECK-SAME: lhs_dilation = array<i64: 2, 2>
// CHECK-SAME: padding = dense<{{\[\[}}2, 1], [2, 1]]>
// CHECK-SAME: window_strides = array<i64: 1, 1>
// CHECK-SAME: -> tensor<1x8x8x8xf32>
// CHECK-NOT: convc.conv_transpose
// HLO-LABEL: module @same_stride2
// HLO: stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
// HLO-SAME: window = {stride = [1, 1], pad = {{\[\[}}2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]}
// HLO-SAME: feature_group_count = 1
module @same_stride2 {
  func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %y : tensor<1x8x8x8xf32>
  }
}

// -----

// SAME with the stride (3) larger than the kernel (2): pads (k - 1, s - 1) = (1, 2), 4 -> 12.
// CHECK-LABEL: module @same_stride_over_kernel
// CHECK: lhs_dilation = array<i64: 3>
// CHECK-SAME: padding = dense<{{\[\[}}1, 2]]>
// CHECK-SAME: -> tensor<1x12x2xf32>
module @same_stride_over_kernel {
  func.func @main(%x: tensor<1x4x3xf32>, %w: tensor<2x3x2xf32>) -> tensor<1x12x2xf32> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 3>} : (tensor<1x4x3xf32>, tensor<2x3x2xf32>) -> tensor<1x12x2xf32>
    func.return %y : tensor<1x12x2xf32>
  }
}

// -----

// VALID on the dilated kernel: k = 2 dilated by 2 is 3; stride 3: pads (2, 2), 5 -> 15.
// CHECK-LABEL: module @valid_rhs_dilation
// CHECK: lhs_dilation = array<i64: 3>
// CHECK-SAME: padding = dense<{{\[\[}}2, 2]]>
// CHECK-SAME: rhs_dilation = array<i64: 2>
// CHECK-SAME: -> tensor<2x15x4xf32>
// HLO-LABEL: module @valid_rhs_dilation
// HLO: window = {stride = [1], pad = {{\[\[}}2, 2]], lhs_dilate = [3], rhs_dilate = [2]}
module @valid_rhs_dilation {
  func.func @main(%x: tensor<2x5x3xf32>, %w: tensor<2x3x4xf32>) -> tensor<2x15x4xf32> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "VALID", rhs_dilation = array<i64: 2>, strides = array<i64: 3>} : (tensor<2x5x3xf32>, tensor<2x3x4xf32>) -> tensor<2x15x4xf32>
    func.return %y : tensor<2x15x4xf32>
  }
}

// -----

// Explicit pairs are the lowered conv's pads (lax's default meaning), negative included;
// with use_consistent_padding they are the forward conv's: k - 1 - p each side.
// CHECK-LABEL: module @explicit_pads
// CHECK: %a = "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}1, -1], [0, 2]]>
// CHECK: %b = "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [2, 0]]>
module @explicit_pads {
  func.func @main(%x: tensor<1x3x4x4xf32>, %w: tensor<5x3x3x3xf32>) -> (tensor<1x5x5x7xf32>, tensor<1x5x7x7xf32>) {
    %a = "convc.conv_transpose"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"], padding = dense<[[1, -1], [0, 2]]> : tensor<2x2xi64>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x5x7xf32>
    %b = "convc.conv_transpose"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"], padding = dense<[[1, 1], [0, 2]]> : tensor<2x2xi64>, strides = array<i64: 2, 2>, use_consistent_padding = true} : (tensor<1x3x4x4xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x7x7xf32>
    func.return %a, %b : tensor<1x5x5x7xf32>, tensor<1x5x7x7xf32>
  }
}

// -----

// transpose_kernel: an explicit reverse of the kernel's spatial dims, then its I/O roles
// swap in the dimension numbers (HWIO read as HWOI); no transpose op.
// CHECK-LABEL: module @transpose_kernel
// CHECK: %[[REV:.*]] = "convc.reverse"(%w) {dimensions = array<i64: 0, 1>}
// CHECK-NOT: convc.transpose
// CHECK: %y = "convc.conv"(%x, %[[REV]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]>
// CHECK-SAME: -> tensor<1x8x8x3xf32>
// HLO-LABEL: module @transpose_kernel
// HLO: %[[REV:.*]] = stablehlo.reverse %w, dims = [0, 1]
// HLO: stablehlo.convolution(%x, %[[REV]]) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]
// HLO-SAME: lhs_dilate = [2, 2]
module @transpose_kernel {
  func.func @main(%x: tensor<1x4x4x8xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<1x8x8x3xf32> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>, transpose_kernel = true} : (tensor<1x4x4x8xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x3xf32>
    func.return %y : tensor<1x8x8x3xf32>
  }
}

// -----

// Groups without transpose_kernel: the kernel already has I = C / G, so the conv just
// carries feature_group_count.
// CHECK-LABEL: module @grouped
// CHECK-NOT: convc.reshape
// CHECK: "convc.conv"(%x, %w)
// CHECK-SAME: feature_group_count = 2 : i64
// CHECK-SAME: -> tensor<1x8x8x4xf32>
module @grouped {
  func.func @main(%x: tensor<1x4x4x6xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32> {
    %y = "convc.conv_transpose"(%x, %w) {feature_group_count = 2 : i64, padding = "SAME", strides = array<i64: 2, 2>} : (tensor<1x4x4x6xf32>, tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32>
    func.return %y : tensor<1x8x8x4xf32>
  }
}

// -----

// Groups with transpose_kernel: after the reverse, the kernel's O dim (6 = the lhs features)
// is split into (G = 2, 3) and the group axis moved into the I dim (2 -> 4), group-major:
// reshape, transpose, reshape; then the conv reads it with I/O swapped.
// CHECK-LABEL: module @grouped_transpose_kernel
// CHECK: %[[REV:.*]] = "convc.reverse"(%w) {dimensions = array<i64: 0, 1>}
// CHECK: %[[SPLIT:.*]] = "convc.reshape"(%[[REV]]) {new_sizes = array<i64: 3, 3, 2, 2, 3>}
// CHECK: %[[MOVED:.*]] = "convc.transpose"(%[[SPLIT]]) {permutation = array<i64: 0, 1, 3, 2, 4>}
// CHECK: %[[KERNEL:.*]] = "convc.reshape"(%[[MOVED]]) {new_sizes = array<i64: 3, 3, 4, 3>}
// CHECK: %y = "convc.conv"(%x, %[[KERNEL]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]>
// CHECK-SAME: feature_group_count = 2 : i64
// CHECK-SAME: -> tensor<1x8x8x4xf32>
// HLO-LABEL: module @grouped_transpose_kernel
// HLO: stablehlo.reverse %w, dims = [0, 1]
// HLO: stablehlo.reshape
// HLO: stablehlo.transpose {{.*}} dims = [0, 1, 3, 2, 4]
// HLO: stablehlo.reshape
// HLO: stablehlo.convolution
// HLO-SAME: feature_group_count = 2
module @grouped_transpose_kernel {
  func.func @main(%x: tensor<1x4x4x6xf32>, %w: tensor<3x3x2x6xf32>) -> tensor<1x8x8x4xf32> {
    %y = "convc.conv_transpose"(%x, %w) {feature_group_count = 2 : i64, padding = "SAME", strides = array<i64: 2, 2>, transpose_kernel = true} : (tensor<1x4x4x6xf32>, tensor<3x3x2x6xf32>) -> tensor<1x8x8x4xf32>
    func.return %y : tensor<1x8x8x4xf32>
  }
}

// -----

// 3-D default layouts NHWDC/HWDIO/NHWDC.
// CHECK-LABEL: module @three_d
// CHECK: dimension_numbers = #convc.dims<[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]>
// CHECK-SAME: lhs_dilation = array<i64: 2, 1, 2>
// CHECK-SAME: -> tensor<1x4x3x6x2xf32>
module @three_d {
  func.func @main(%x: tensor<1x2x3x3x2xf32>, %w: tensor<2x1x2x2x2xf32>) -> tensor<1x4x3x6x2xf32> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 1, 2>} : (tensor<1x2x3x3x2xf32>, tensor<2x1x2x2x2xf32>) -> tensor<1x4x3x6x2xf32>
    func.return %y : tensor<1x4x3x6x2xf32>
  }
}

// -----

// Quantized operands (the spec's quantized convolution takes lhs_dilation): the lowered
// conv keeps the quantized types, its kernel the per-tensor quantized kernel reversed.
// CHECK-LABEL: module @quantized_transpose_kernel
// CHECK: %[[REV:[^ ]+]] = "convc.reverse"(%w) {dimensions = array<i64: 0, 1>} : (tensor<3x3x4x2x!quant.uniform<i8:f32, 2.500000e-01:1>>) -> tensor<3x3x4x2x!quant.uniform<i8:f32, 2.500000e-01:1>>
// CHECK: %y = "convc.conv"(%x, %[[REV]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]>, lhs_dilation = array<i64: 2, 2>
// CHECK-SAME: preferred_element_type = "!quant.uniform<i8:f32, 2.000000e+00>"
// CHECK-SAME: -> tensor<1x6x6x4x!quant.uniform<i8:f32, 2.000000e+00>>
// HLO-LABEL: module @quantized_transpose_kernel
// HLO: stablehlo.reverse %w, dims = [0, 1] : tensor<3x3x4x2x!quant.uniform<i8:f32, 2.500000e-01:1>>
// HLO: stablehlo.convolution
// HLO-SAME: lhs_dilate = [2, 2]
// HLO-SAME: -> tensor<1x6x6x4x!quant.uniform<i8:f32, 2.000000e+00>>
module @quantized_transpose_kernel {
  func.func @main(%x: tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:-3>>, %w: tensor<3x3x4x2x!quant.uniform<i8:f32, 0.25:1>>) -> tensor<1x6x6x4x!quant.uniform<i8:f32, 2.0:0>> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>, transpose_kernel = true, preferred_element_type = "!quant.uniform<i8:f32, 2.0:0>"} : (tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x3x4x2x!quant.uniform<i8:f32, 0.25:1>>) -> tensor<1x6x6x4x!quant.uniform<i8:f32, 2.0:0>>
    func.return %y : tensor<1x6x6x4x!quant.uniform<i8:f32, 2.0:0>>
  }
}

// -----

// ERR: lower-conv-transpose.mlir:{{[0-9]+}}:5: error: 't1' (conv_transpose): conv_transpose has no default dimension_numbers for rank 6; give them explicitly [T1]
module @no_default_layout {
  func.func @main(%x: tensor<1x2x2x2x2x1xf32>, %w: tensor<1x1x1x1x1x1xf32>) -> tensor<1x2x2x2x2x1xf32> {
    %t1 = "convc.conv_transpose"(%x, %w) : (tensor<1x2x2x2x2x1xf32>, tensor<1x1x1x1x1x1xf32>) -> tensor<1x2x2x2x2x1xf32>
    func.return %t1 : tensor<1x2x2x2x2x1xf32>
  }
}

// -----

// ERR: lower-conv-transpose.mlir:{{[0-9]+}}:5: error: 't2' (conv_transpose): conv_transpose padding must be SAME, VALID or {{.*}}, got SAME_LOWER [T2]
module @same_lower {
  func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
    %t2 = "convc.conv_transpose"(%x, %w) {padding = "SAME_LOWER", strides = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %t2 : tensor<1x8x8x8xf32>
  }
}

// -----

// ERR: lower-conv-transpose.mlir:{{[0-9]+}}:5: error: 't3' (conv_transpose): lhs feature dimension 5 is not divisible by feature_group_count 2 [T3]
module @lhs_features_not_grouped {
  func.func @main(%x: tensor<1x4x4x5xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<1x4x4x4xf32> {
    %t3 = "convc.conv_transpose"(%x, %w) {feature_group_count = 2 : i64} : (tensor<1x4x4x5xf32>, tensor<3x3x3x4xf32>) -> tensor<1x4x4x4xf32>
    func.return %t3 : tensor<1x4x4x4xf32>
  }
}

// -----

// ERR: lower-conv-transpose.mlir:{{[0-9]+}}:5: error: 't4' (conv_transpose): with transpose_kernel the rhs output feature dimension 8 is the one contracted with the lhs and must equal lhs feature dimension 3 [T4]
module @kernel_features {
  func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<1x8x8x3xf32> {
    %t4 = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>, transpose_kernel = true} : (tensor<1x4x4x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x3xf32>
    func.return %t4 : tensor<1x8x8x3xf32>
  }
}

// -----

// ERR: lower-conv-transpose.mlir:{{[0-9]+}}:5: error: 't5' (conv_transpose): rhs output feature dimension 5 is not divisible by feature_group_count 2 [T5]
module @out_features_not_grouped {
  func.func @main(%x: tensor<1x4x4x6xf32>, %w: tensor<3x3x3x5xf32>) -> tensor<1x4x4x5xf32> {
    %t5 = "convc.conv_transpose"(%x, %w) {feature_group_count = 2 : i64} : (tensor<1x4x4x6xf32>, tensor<3x3x3x5xf32>) -> tensor<1x4x4x5xf32>
    func.return %t5 : tensor<1x4x4x5xf32>
  }
}

// -----

// ERR: lower-conv-transpose.mlir:{{[0-9]+}}:5: error: 't6' (conv_transpose): a per-axis quantized kernel cannot be used with transpose_kernel: the lowered conv's kernel is this one reversed, and StableHLO's reverse takes per-tensor quantized tensors only {{.*}} [T6]
module @per_axis_kernel_reversed {
  func.func @main(%x: tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x3x2x2x!quant.uniform<i8:f32:2, {0.5, 0.25}>>) -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0>> {
    %t6 = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>, transpose_kernel = true, preferred_element_type = "!quant.uniform<i8:f32, 2.0>"} : (tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x3x2x2x!quant.uniform<i8:f32:2, {0.5, 0.25}>>) -> tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0>>
    func.return %t6 : tensor<1x6x6x2x!quant.uniform<i8:f32, 2.0>>
  }
}
