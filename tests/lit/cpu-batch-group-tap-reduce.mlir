// RUN: convc-opt %s -p cpu-batch-group-tap-reduce --split-input-file | filecheck %s
// RUN: convc-opt %s -p "cpu-batch-group-tap-reduce{max_windows=1}" --split-input-file | filecheck %s --check-prefix=LIMIT

// One lhs batch and one output feature per batch group (a depthwise weight gradient):
// each output window s is window(lhs_padded, s) * rhs summed over every dim but the lhs
// batch dim (the group); the rhs is first laid out like the lhs. The sums take two steps:
// one variadic `stacked_reduce_sum` over the outermost summed dim for all windows at once,
// then a `reduce_sum` over the rest, giving [windows, G], reshaped (then transposed) into
// the result.

// The weight gradient of a depthwise 2x1 conv (pad 1 low in H) as jax.vjp emits it:
// two windows (the taps), rows 0..2 and 1..3 of the padded input times dy.
// CHECK-LABEL: module @depthwise_weight_grad
// CHECK: %[[P:.*]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]>
// CHECK: %[[W0:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 2, 3, 3, 4>, start_indices = array<i64: 0, 0, 0, 0>
// CHECK: %[[M0:.*]] = "convc.multiply"(%[[W0]], %dy)
// CHECK: %[[W1:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 2, 4, 3, 4>, start_indices = array<i64: 0, 1, 0, 0>
// CHECK: %[[M1:.*]] = "convc.multiply"(%[[W1]], %dy)
// CHECK: %[[PART:.*]] = "convc.stacked_reduce_sum"(%[[M0]], %[[M1]]) {axes = array<i64: 0>}
// CHECK-SAME: -> tensor<2x3x3x4xf32>
// CHECK: %[[S:.*]] = "convc.reduce_sum"(%[[PART]]) {axes = array<i64: 1, 2>} : {{.*}} -> tensor<2x4xf32>
// CHECK: %c = "convc.reshape"(%[[S]]) {new_sizes = array<i64: 2, 1, 1, 4>}
// CHECK-NOT: convc.conv
// LIMIT-LABEL: module @depthwise_weight_grad
// LIMIT: "convc.conv"
module @depthwise_weight_grad {
  func.func @main(%x: tensor<2x3x3x4xf32>, %dy: tensor<2x3x3x4xf32>) -> tensor<2x1x1x4xf32> {
    %c = "convc.conv"(%x, %dy) {batch_group_count = 4 : i64, dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[1, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x3x3x4xf32>, tensor<2x3x3x4xf32>) -> tensor<2x1x1x4xf32>
    func.return %c : tensor<2x1x1x4xf32>
  }
}

// -----

// NHWC lhs, OIHW rhs, NCHW out, one window, lhs dilation 2 in W (interior padding) and
// stride/rhs dilation along W: the rhs is transposed to the lhs layout (O<->N, I<->C),
// the window is taken every rhs_dilation = 2 columns, summed first over H (the outermost
// summed dim), then over W and C, and the [1, G] row becomes the 1x4x1x1 NCHW result by
// a reshape and a transpose.
// CHECK-LABEL: module @layouts
// CHECK: %[[P:.*]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]]>
// CHECK-SAME: -> tensor<4x2x5x3xf32>
// CHECK: %[[A:.*]] = "convc.transpose"(%w) {permutation = array<i64: 0, 2, 3, 1>} : {{.*}} -> tensor<4x2x3x3xf32>
// CHECK: %[[W:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 4, 2, 5, 3>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 2, 1>}
// CHECK: %[[M:.*]] = "convc.multiply"(%[[W]], %[[A]])
// CHECK: %[[PART:.*]] = "convc.stacked_reduce_sum"(%[[M]]) {axes = array<i64: 1>} : {{.*}} -> tensor<1x4x3x3xf32>
// CHECK: %[[S:.*]] = "convc.reduce_sum"(%[[PART]]) {axes = array<i64: 2, 3>} : {{.*}} -> tensor<1x4xf32>
// CHECK: %[[O:.*]] = "convc.reshape"(%[[S]]) {new_sizes = array<i64: 1, 1, 1, 4>}
// CHECK: %c = "convc.transpose"(%[[O]]) {permutation = array<i64: 2, 3, 0, 1>} : {{.*}} -> tensor<1x4x1x1xf32>
// LIMIT-LABEL: module @layouts
// LIMIT: "convc.stacked_reduce_sum"
module @layouts {
  func.func @main(%x: tensor<4x2x3x3xf32>, %w: tensor<4x3x2x3xf32>) -> tensor<1x4x1x1xf32> {
    %c = "convc.conv"(%x, %w) {batch_group_count = 4 : i64, dimension_numbers = #convc.dims<[b, 0, 1, f]x[o, i, 0, 1]->[b, f, 0, 1]>, lhs_dilation = array<i64: 1, 2>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 2>, window_strides = array<i64: 1, 2>} : (tensor<4x2x3x3xf32>, tensor<4x3x2x3xf32>) -> tensor<1x4x1x1xf32>
    func.return %c : tensor<1x4x1x1xf32>
  }
}

// -----

// Not rewritten: two lhs batches per group (B' = 2), two output features per group,
// and an f16 conv.
// CHECK-LABEL: module @untouched
// CHECK-COUNT-3: "convc.conv"
// CHECK-NOT: reduce_sum
module @untouched {
  func.func @main(%x: tensor<2x3x3x4xf32>, %dy: tensor<2x3x3x2xf32>, %dy8: tensor<2x3x3x8xf32>, %h: tensor<2x3x3x4xf16>, %dh: tensor<2x3x3x4xf16>) -> (tensor<1x1x2x2xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x4xf16>) {
    %two_batches = "convc.conv"(%x, %dy) {batch_group_count = 2 : i64, dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x3x3x4xf32>, tensor<2x3x3x2xf32>) -> tensor<1x1x2x2xf32>
    %two_features = "convc.conv"(%x, %dy8) {batch_group_count = 4 : i64, dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x3x3x4xf32>, tensor<2x3x3x8xf32>) -> tensor<1x1x1x8xf32>
    %half = "convc.conv"(%h, %dh) {batch_group_count = 4 : i64, dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x3x3x4xf16>, tensor<2x3x3x4xf16>) -> tensor<1x1x1x4xf16>
    func.return %two_batches, %two_features, %half : tensor<1x1x2x2xf32>, tensor<1x1x1x8xf32>, tensor<1x1x1x4xf16>
  }
}
