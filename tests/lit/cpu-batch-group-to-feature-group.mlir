// RUN: convc-opt %s -p cpu-batch-group-to-feature-group --split-input-file | filecheck %s

// batch_group_count = G: the lhs batch B = G*B' splits into (G, B'), G moves in front of
// the lhs feature dim F, and (G, F) merge: batch B', features G*F grouped as the rhs's
// out features already are, so the conv keeps its rhs and dimension numbers and takes
// feature_group_count = G instead.

// The weight gradient of a G=4 grouped 3x3 conv, as jax.vjp emits it: lhs (the input,
// 3x4x4x8 NHWC) has batch = C = 8 at dim 3 and feature = N = 3 at dim 0.
// CHECK-LABEL: module @grouped_weight_grad
// CHECK: %[[S:.*]] = "convc.reshape"(%x) {new_sizes = array<i64: 3, 4, 4, 4, 2>}
// CHECK: %[[T:.*]] = "convc.transpose"(%[[S]]) {permutation = array<i64: 3, 0, 1, 2, 4>} : {{.*}} -> tensor<4x3x4x4x2xf32>
// CHECK: %[[M:.*]] = "convc.reshape"(%[[T]]) {new_sizes = array<i64: 12, 4, 4, 2>}
// CHECK: %c = "convc.conv"(%[[M]], %dy)
// CHECK-SAME: dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, feature_group_count = 4 : i64, padding = dense<{{\[\[}}1, 1], [1, 1]]>
// CHECK-NOT: batch_group_count
// CHECK-SAME: -> tensor<3x3x2x8xf32>
module @grouped_weight_grad {
  func.func @main(%x: tensor<3x4x4x8xf32>, %dy: tensor<3x4x4x8xf32>) -> tensor<3x3x2x8xf32> {
    %c = "convc.conv"(%x, %dy) {batch_group_count = 4 : i64, dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<3x4x4x8xf32>, tensor<3x4x4x8xf32>) -> tensor<3x3x2x8xf32>
    func.return %c : tensor<3x3x2x8xf32>
  }
}

// -----

// NCHW, batch before feature: G=3 moves from dim 0 to just before C (dim 1).
// Strides, dilation and precision are kept.
// CHECK-LABEL: module @nchw
// CHECK: %[[S:.*]] = "convc.reshape"(%x) {new_sizes = array<i64: 3, 2, 4, 5, 5>}
// CHECK: %[[T:.*]] = "convc.transpose"(%[[S]]) {permutation = array<i64: 1, 0, 2, 3, 4>}
// CHECK: %[[M:.*]] = "convc.reshape"(%[[T]]) {new_sizes = array<i64: 2, 12, 5, 5>}
// CHECK: %c = "convc.conv"(%[[M]], %w)
// CHECK-SAME: feature_group_count = 3 : i64
// CHECK-SAME: precision = "HIGHEST", rhs_dilation = array<i64: 2, 1>, window_strides = array<i64: 1, 2>
// CHECK-SAME: -> tensor<2x6x1x2xf32>
module @nchw {
  func.func @main(%x: tensor<6x4x5x5xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x1x2xf32> {
    %c = "convc.conv"(%x, %w) {batch_group_count = 3 : i64, dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, precision = "HIGHEST", rhs_dilation = array<i64: 2, 1>, window_strides = array<i64: 1, 2>} : (tensor<6x4x5x5xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x1x2xf32>
    func.return %c : tensor<2x6x1x2xf32>
  }
}

// -----

// batch_group_count = 1: nothing to do.
// CHECK-LABEL: module @plain
// CHECK-NEXT: func.func
// CHECK-NEXT: %c = "convc.conv"(%x, %w)
module @plain {
  func.func @main(%x: tensor<2x4x5x5xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x3x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x4x5x5xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x3x3xf32>
    func.return %c : tensor<2x6x3x3xf32>
  }
}
