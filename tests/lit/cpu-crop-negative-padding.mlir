// RUN: convc-opt %s -p cpu-crop-negative-padding --split-input-file | filecheck %s

// Negative conv pads become a slice of the input (XLA:CPU misreads negative low padding
// next to positive high padding, openxla/xla#48713). Crop c off a d-dilated input: drop
// ceil(c / d) elements, keep ceil(c / d) * d - c zeros of padding. Worked out by hand.

// Low -2, high 1, no dilation: drop 2 elements low, keep the high pad.
// CHECK-LABEL: module @crop_low
// CHECK: %[[CROP:.*]] = "convc.slice"(%x)
// CHECK-SAME: limit_indices = array<i64: 2, 3, 6>, start_indices = array<i64: 0, 0, 2>
// CHECK-SAME: -> tensor<2x3x4xf32>
// CHECK: "convc.conv"(%[[CROP]], %w)
// CHECK-SAME: padding = dense<{{\[\[}}0, 1]]> : tensor<1x2xi64>
// CHECK-SAME: -> tensor<2x4x3xf32>
module @crop_low {
  func.func @main(%x: tensor<2x3x6xf32>, %w: tensor<4x3x3xf32>) -> tensor<2x4x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[-2, 1]]> : tensor<1x2xi64>} : (tensor<2x3x6xf32>, tensor<4x3x3xf32>) -> tensor<2x4x3xf32>
    func.return %c : tensor<2x4x3xf32>
  }
}

// -----

// lhs dilation 2 (dilated size 11): crop 3 low drops ceil(3/2) = 2 elements and leaves one
// zero; crop 1 high drops 1 element and leaves one zero. Dilated size of the 3 kept: 5.
// CHECK-LABEL: module @crop_dilated
// CHECK: %[[CROP:.*]] = "convc.slice"(%x)
// CHECK-SAME: limit_indices = array<i64: 1, 2, 5>, start_indices = array<i64: 0, 0, 2>
// CHECK: "convc.conv"(%[[CROP]], %w)
// CHECK-SAME: padding = dense<{{\[\[}}1, 1]]> : tensor<1x2xi64>
// CHECK-SAME: -> tensor<1x2x6xf32>
module @crop_dilated {
  func.func @main(%x: tensor<1x2x6xf32>, %w: tensor<2x2x2xf32>) -> tensor<1x2x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, lhs_dilation = array<i64: 2>, padding = dense<[[-3, -1]]> : tensor<1x2xi64>} : (tensor<1x2x6xf32>, tensor<2x2x2xf32>) -> tensor<1x2x6xf32>
    func.return %c : tensor<1x2x6xf32>
  }
}

// -----

// Only the dim with a negative pad is sliced (NHWC: W is dim 2).
// CHECK-LABEL: module @crop_one_dim
// CHECK: "convc.slice"(%x)
// CHECK-SAME: limit_indices = array<i64: 1, 5, 5, 2>, start_indices = array<i64: 0, 0, 1, 0>
// CHECK: padding = dense<{{\[\[}}1, 1], [0, 2]]> : tensor<2x2xi64>
module @crop_one_dim {
  func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x5x4x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [-1, 2]]> : tensor<2x2xi64>} : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x5x4x4xf32>
    func.return %c : tensor<1x5x4x4xf32>
  }
}

// -----

// Non-negative pads are left alone; a crop that leaves no input element (3 off a size-3
// input) means every window sees padding only: zeros.
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.slice
// CHECK: %[[A:.*]] = "convc.conv"(%x, %w)
// CHECK-SAME: padding = dense<{{\[\[}}1, 2]]>
// CHECK-NOT: "convc.conv"
// CHECK: %[[ZERO:.*]] = "convc.constant"() {value = dense<0.0> : tensor<f32>}
// CHECK: %[[B:.*]] = "convc.broadcast_in_dim"(%[[ZERO]])
// CHECK-SAME: -> tensor<1x1x1xf32>
// CHECK: func.return %[[A]], %[[B]]
module @untouched {
  func.func @main(%x: tensor<1x1x3xf32>, %w: tensor<1x1x2xf32>) -> (tensor<1x1x5xf32>, tensor<1x1x1xf32>) {
    %a = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[1, 2]]> : tensor<1x2xi64>} : (tensor<1x1x3xf32>, tensor<1x1x2xf32>) -> tensor<1x1x5xf32>
    %b = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[-3, 2]]> : tensor<1x2xi64>} : (tensor<1x1x3xf32>, tensor<1x1x2xf32>) -> tensor<1x1x1xf32>
    func.return %a, %b : tensor<1x1x5xf32>, tensor<1x1x1xf32>
  }
}
