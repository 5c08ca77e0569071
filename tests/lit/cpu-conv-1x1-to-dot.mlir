// RUN: convc-opt %s -p cpu-conv-1x1-to-dot --split-input-file | filecheck %s

// A 1x1 conv contracts the lhs feature dim with the kernel's input features: the kernel
// becomes a matrix (its O and I dims in their original order) and the conv one
// dot_general, whose result is the lhs dims but the feature dim, then the out features.

// NHWC/HWIO/NHWC: the dot result is already NHWC, no transpose.
// CHECK-LABEL: module @nhwc
// CHECK: %[[M:.*]] = "convc.reshape"(%w) {new_sizes = array<i64: 6, 4>}
// CHECK-NEXT: %c = "convc.dot_general"(%x, %[[M]])
// CHECK-SAME: lhs_contracting_dimensions = array<i64: 3>, rhs_contracting_dimensions = array<i64: 0>
// CHECK-SAME: -> tensor<2x5x5x4xf32>
// CHECK-NOT: convc.conv
// CHECK-NOT: convc.transpose
// CHECK: func.return %c
module @nhwc {
  func.func @main(%x: tensor<2x5x5x6xf32>, %w: tensor<1x1x6x4xf32>) -> tensor<2x5x5x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x5x5x6xf32>, tensor<1x1x6x4xf32>) -> tensor<2x5x5x4xf32>
    func.return %c : tensor<2x5x5x4xf32>
  }
}

// -----

// A constant integer kernel of a channels-last conv: an [out, in] constant (its values
// transposed here: XLA would fold a transpose into the dot's dims and keep [in, out]) and the
// input a matrix of positions, both contracting their minor dim; the result reshaped back.
// CHECK-LABEL: module @integer_constant_kernel
// CHECK: %[[ROWS:.*]] = "convc.constant"() {value = dense<{{\[\[}}1, 3, 5], [2, 4, 6]]> : tensor<2x3xi8>}
// CHECK: %[[P:.*]] = "convc.reshape"(%x) {new_sizes = array<i64: 8, 3>}
// CHECK-NEXT: %[[D:.*]] = "convc.dot_general"(%[[P]], %[[ROWS]])
// CHECK-SAME: lhs_contracting_dimensions = array<i64: 1>
// CHECK-SAME: preferred_element_type = i32
// CHECK-SAME: rhs_contracting_dimensions = array<i64: 1>
// CHECK-SAME: -> tensor<8x2xi32>
// CHECK-NEXT: %c = "convc.reshape"(%[[D]]) {new_sizes = array<i64: 2, 2, 2, 2>}
// CHECK-NOT: convc.conv
// CHECK: func.return %c
module @integer_constant_kernel {
  func.func @main(%x: tensor<2x2x2x3xi8>) -> tensor<2x2x2x2xi32> {
    %w = "convc.constant"() {value = dense<[[[[1, 2], [3, 4], [5, 6]]]]> : tensor<1x1x3x2xi8>} : () -> tensor<1x1x3x2xi8>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, preferred_element_type = i32} : (tensor<2x2x2x3xi8>, tensor<1x1x3x2xi8>) -> tensor<2x2x2x2xi32>
    func.return %c : tensor<2x2x2x2xi32>
  }
}

// -----

// One position: XLA runs its own matrix-vector product, not YNNPACK, so the kernel keeps its
// [in, out] order, as a float kernel's.
// CHECK-LABEL: module @integer_constant_kernel_one_position
// CHECK: %[[M:.*]] = "convc.reshape"(%w) {new_sizes = array<i64: 3, 2>}
// CHECK-NEXT: %c = "convc.dot_general"(%x, %[[M]])
// CHECK-SAME: lhs_contracting_dimensions = array<i64: 3>
// CHECK-SAME: rhs_contracting_dimensions = array<i64: 0>
// CHECK-NOT: convc.conv
module @integer_constant_kernel_one_position {
  func.func @main(%x: tensor<1x1x1x3xi8>) -> tensor<1x1x1x2xi32> {
    %w = "convc.constant"() {value = dense<[[[[1, 2], [3, 4], [5, 6]]]]> : tensor<1x1x3x2xi8>} : () -> tensor<1x1x3x2xi8>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, preferred_element_type = i32} : (tensor<1x1x1x3xi8>, tensor<1x1x3x2xi8>) -> tensor<1x1x1x2xi32>
    func.return %c : tensor<1x1x1x2xi32>
  }
}

// -----

// NCHW with stride 2: a strided slice first; OIHW gives an (O, I) matrix contracted on
// dim 1; the (N, H, W, O) result is transposed back to NCHW. Precision is kept.
// CHECK-LABEL: module @nchw_strided
// CHECK: %[[S:.*]] = "convc.slice"(%x) {limit_indices = array<i64: 2, 6, 5, 5>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 2, 2>}
// CHECK-SAME: -> tensor<2x6x3x3xf32>
// CHECK: %[[M:.*]] = "convc.reshape"(%w) {new_sizes = array<i64: 4, 6>}
// CHECK: %[[D:.*]] = "convc.dot_general"(%[[S]], %[[M]])
// CHECK-SAME: lhs_contracting_dimensions = array<i64: 1>, precision = "HIGHEST", rhs_contracting_dimensions = array<i64: 1>
// CHECK-SAME: -> tensor<2x3x3x4xf32>
// CHECK: %c = "convc.transpose"(%[[D]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-SAME: -> tensor<2x4x3x3xf32>
module @nchw_strided {
  func.func @main(%x: tensor<2x6x5x5xf32>, %w: tensor<4x6x1x1xf32>) -> tensor<2x4x3x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, precision = "HIGHEST", window_strides = array<i64: 2, 2>} : (tensor<2x6x5x5xf32>, tensor<4x6x1x1xf32>) -> tensor<2x4x3x3xf32>
    func.return %c : tensor<2x4x3x3xf32>
  }
}

// -----

// A full window (the kernel gradient of a 1x1 conv: the input against the output
// gradient, [f, 0, 1, b]x[i, 0, 1, o]): the feature and spatial dims contract, the
// [batch, out feature] product is reshaped to the 1x1 output.
// CHECK-LABEL: module @full_window
// CHECK: %[[D:.*]] = "convc.dot_general"(%x, %dy)
// CHECK-SAME: lhs_contracting_dimensions = array<i64: 0, 1, 2>, rhs_contracting_dimensions = array<i64: 0, 1, 2>
// CHECK-SAME: -> tensor<2x4xf32>
// CHECK-NEXT: %dw = "convc.reshape"(%[[D]]) {new_sizes = array<i64: 1, 1, 2, 4>}
// CHECK-NOT: convc.conv
// CHECK: func.return %dw
module @full_window {
  func.func @main(%x: tensor<3x5x5x2xf32>, %dy: tensor<3x5x5x4xf32>) -> tensor<1x1x2x4xf32> {
    %dw = "convc.conv"(%x, %dy) {dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<3x5x5x2xf32>, tensor<3x5x5x4xf32>) -> tensor<1x1x2x4xf32>
    func.return %dw : tensor<1x1x2x4xf32>
  }
}

// -----

// A full window whose output puts the feature dim before the batch dim: the product is
// transposed before the reshape.
// CHECK-LABEL: module @full_window_feature_first
// CHECK: %[[D:.*]] = "convc.dot_general"(%x, %dy)
// CHECK-SAME: -> tensor<2x4xf32>
// CHECK-NEXT: %[[T:.*]] = "convc.transpose"(%[[D]]) {permutation = array<i64: 1, 0>}
// CHECK-NEXT: %dw = "convc.reshape"(%[[T]]) {new_sizes = array<i64: 4, 1, 1, 2>}
module @full_window_feature_first {
  func.func @main(%x: tensor<3x5x5x2xf32>, %dy: tensor<3x5x5x4xf32>) -> tensor<4x1x1x2xf32> {
    %dw = "convc.conv"(%x, %dy) {dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[f, 0, 1, b]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<3x5x5x2xf32>, tensor<3x5x5x4xf32>) -> tensor<4x1x1x2xf32>
    func.return %dw : tensor<4x1x1x2xf32>
  }
}

// -----

// Not rewritten: a window as large as the input but padded, or rhs-dilated.
// CHECK-LABEL: module @full_window_untouched
// CHECK-COUNT-2: "convc.conv"
// CHECK-NOT: convc.dot_general
module @full_window_untouched {
  func.func @main(%x: tensor<3x5x5x2xf32>, %dy: tensor<3x5x5x4xf32>, %dy3: tensor<3x3x3x4xf32>) -> (tensor<3x3x2x4xf32>, tensor<1x1x2x4xf32>) {
    %padded = "convc.conv"(%x, %dy) {dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<3x5x5x2xf32>, tensor<3x5x5x4xf32>) -> tensor<3x3x2x4xf32>
    %dilated = "convc.conv"(%x, %dy3) {dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 2, 2>} : (tensor<3x5x5x2xf32>, tensor<3x3x3x4xf32>) -> tensor<1x1x2x4xf32>
    func.return %padded, %dilated : tensor<3x3x2x4xf32>, tensor<1x1x2x4xf32>
  }
}

// -----

// Not rewritten: padding, a 3x3 kernel, feature groups, batch groups.
// CHECK-LABEL: module @untouched
// CHECK-COUNT-4: "convc.conv"
// CHECK-NOT: convc.dot_general
module @untouched {
  func.func @main(%x: tensor<2x5x5x4xf32>, %w: tensor<1x1x4x4xf32>, %w3: tensor<3x3x4x4xf32>, %wg: tensor<1x1x2x4xf32>) -> (tensor<2x7x7x4xf32>, tensor<2x3x3x4xf32>, tensor<2x5x5x4xf32>, tensor<1x5x5x4xf32>) {
    %padded = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x5x5x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x7x7x4xf32>
    %k3 = "convc.conv"(%x, %w3) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x5x5x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x3x3x4xf32>
    %grouped = "convc.conv"(%x, %wg) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x5x5x4xf32>, tensor<1x1x2x4xf32>) -> tensor<2x5x5x4xf32>
    %batched = "convc.conv"(%x, %w) {batch_group_count = 2 : i64, dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x5x5x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x5x5x4xf32>
    func.return %padded, %k3, %grouped, %batched : tensor<2x7x7x4xf32>, tensor<2x3x3x4xf32>, tensor<2x5x5x4xf32>, tensor<1x5x5x4xf32>
  }
}
