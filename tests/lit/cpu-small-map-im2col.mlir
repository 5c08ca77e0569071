// RUN: convc-opt %s -p cpu-small-map-im2col --split-input-file | filecheck %s

// A channels-last conv whose window is larger than its input becomes im2col: the input
// padded, one strided slice per tap (row-major over the kernel), joined along the feature
// dim, times the kernel as a [taps x in, out] matrix. Worked out by hand.

// A 3x3 SAME conv over a 2x2 map (2 features in, 3 out): 4x4 padded, nine 2x2 slices, 18 columns.
// CHECK-LABEL: module @two_by_two_map
// CHECK: %[[PAD:[^ ]+]] = "convc.pad"(%x)
// CHECK-SAME: -> tensor<1x4x4x2xf32>
// CHECK: %[[T0:[^ ]+]] = "convc.slice"(%[[PAD]]) {limit_indices = array<i64: 1, 2, 2, 2>, start_indices = array<i64: 0, 0, 0, 0>}
// CHECK: %[[T8:[^ ]+]] = "convc.slice"(%[[PAD]]) {limit_indices = array<i64: 1, 4, 4, 2>, start_indices = array<i64: 0, 2, 2, 0>}
// CHECK: %[[COLS:[^ ]+]] = "convc.concatenate"(%[[T0]], {{.*}}, %[[T8]]) {dimension = 3 : i64}
// CHECK-SAME: -> tensor<1x2x2x18xf32>
// CHECK: %[[M:[^ ]+]] = "convc.reshape"(%w) {new_sizes = array<i64: 18, 3>}
// CHECK: %c = "convc.dot_general"(%[[COLS]], %[[M]]) {lhs_contracting_dimensions = array<i64: 3>, rhs_contracting_dimensions = array<i64: 0>}
// CHECK-SAME: -> tensor<1x2x2x3xf32>
// CHECK-NOT: convc.conv
module @two_by_two_map {
  func.func @main(%x: tensor<1x2x2x2xf32>, %w: tensor<3x3x2x3xf32>) -> tensor<1x2x2x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x2x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x2x2x3xf32>
    func.return %c : tensor<1x2x2x3xf32>
  }
}

// -----

// Left alone: a window that fits its input (%fits), a channels-first conv (%nchw), a
// grouped one (%grouped).
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.dot_general
// CHECK: %fits = "convc.conv"
// CHECK: %nchw = "convc.conv"
// CHECK: %grouped = "convc.conv"
module @untouched {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x2xf32>, %y: tensor<1x2x2x2xf32>, %v: tensor<2x2x3x3xf32>, %g: tensor<3x3x1x2xf32>) -> (tensor<1x4x4x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
    %fits = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32>
    %nchw = "convc.conv"(%y, %v) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
    %grouped = "convc.conv"(%y, %g) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x2x2xf32>, tensor<3x3x1x2xf32>) -> tensor<1x2x2x2xf32>
    func.return %fits, %nchw, %grouped : tensor<1x4x4x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  }
}
