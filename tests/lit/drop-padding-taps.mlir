// RUN: convc-opt %s -p drop-padding-taps --split-input-file | filecheck %s

// Kernel taps that only ever meet padding are sliced off, with the padding they face. Tap k
// (stride s, rhs dilation r) reads input positions o*s + k*r - low. Worked out by hand.

// A 3x3 SAME conv over a 1x1 map: only the centre tap meets the input.
// CHECK-LABEL: module @one_pixel_map
// CHECK: %[[TAPS:.*]] = "convc.slice"(%w)
// CHECK-SAME: limit_indices = array<i64: 8, 4, 2, 2>, start_indices = array<i64: 0, 0, 1, 1>
// CHECK-SAME: -> tensor<8x4x1x1xf32>
// CHECK: "convc.conv"(%x, %[[TAPS]])
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]> : tensor<2x2xi64>
// CHECK-SAME: -> tensor<2x8x1x1xf32>
module @one_pixel_map {
  func.func @main(%x: tensor<2x4x1x1xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x4x1x1xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32>
    func.return %c : tensor<2x8x1x1xf32>
  }
}

// -----

// Stride 2 over a 2x2 map (NHWC, HWIO): one output, reading positions k - 1, so tap 0 goes
// with the low pad; tap 2 reads position 1 and stays, and the high pad no window reaches
// goes: a full-window 2x2 conv.
// CHECK-LABEL: module @strided_small_map
// CHECK: %[[TAPS:.*]] = "convc.slice"(%w)
// CHECK-SAME: limit_indices = array<i64: 3, 3, 4, 8>, start_indices = array<i64: 1, 1, 0, 0>
// CHECK: "convc.conv"(%x, %[[TAPS]])
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]> : tensor<2x2xi64>
// CHECK-SAME: window_strides = array<i64: 2, 2>
// CHECK-SAME: -> tensor<1x1x1x8xf32>
module @strided_small_map {
  func.func @main(%x: tensor<1x2x2x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x1x1x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, window_strides = array<i64: 2, 2>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x2x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x1x1x8xf32>
    func.return %c : tensor<1x1x1x8xf32>
  }
}

// -----

// A constant kernel is sliced here: a new constant of the live taps.
// CHECK-LABEL: module @constant_kernel
// CHECK: %[[TAPS:.*]] = "convc.constant"() {value = dense<{{\[\[\[}}2.0]]]> : tensor<1x1x1xf32>}
// CHECK-NOT: convc.slice
// CHECK: "convc.conv"(%x, %[[TAPS]])
// CHECK-SAME: padding = dense<{{\[\[}}0, 0]]> : tensor<1x2xi64>
module @constant_kernel {
  func.func @main(%x: tensor<1x1x1xf32>) -> tensor<1x1x1xf32> {
    %w = "convc.constant"() {value = dense<[[[1.0, 2.0, 3.0]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[1, 1]]> : tensor<1x2xi64>} : (tensor<1x1x1xf32>, tensor<1x1x3xf32>) -> tensor<1x1x1xf32>
    func.return %c : tensor<1x1x1xf32>
  }
}

// -----

// rhs dilation 2 over one element with pads 2: taps read 2k - 2, only tap 1 meets the input,
// and each pad covers one dilated tap.
// CHECK-LABEL: module @dilated
// CHECK: %[[TAPS:.*]] = "convc.slice"(%w)
// CHECK-SAME: limit_indices = array<i64: 2, 3, 2>, start_indices = array<i64: 0, 0, 1>
// CHECK: "convc.conv"(%x, %[[TAPS]])
// CHECK-SAME: padding = dense<{{\[\[}}0, 0]]> : tensor<1x2xi64>
// CHECK-SAME: rhs_dilation = array<i64: 2>
module @dilated {
  func.func @main(%x: tensor<1x3x1xf32>, %w: tensor<2x3x3xf32>) -> tensor<1x2x1xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[2, 2]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 2>} : (tensor<1x3x1xf32>, tensor<2x3x3xf32>) -> tensor<1x2x1xf32>
    func.return %c : tensor<1x2x1xf32>
  }
}

// -----

// Left alone: every tap meets the input (%live); a dead tap whose pad is narrower than the
// dilated step (%narrow: taps read 2k - 1 of 3 elements, pads 1 < 2); a pinned lowering
// (%pinned); an lhs-dilated conv (%dilated_input).
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.slice
// CHECK: %live = "convc.conv"(%x, %w)
// CHECK: %narrow = "convc.conv"(%x, %w)
// CHECK: %pinned = "convc.conv"(%p, %w)
// CHECK: %dilated_input = "convc.conv"(%p, %w)
module @untouched {
  func.func @main(%x: tensor<1x3x3xf32>, %w: tensor<2x3x3xf32>, %p: tensor<1x3x1xf32>) -> (tensor<1x2x3xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) {
    %live = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[1, 1]]> : tensor<1x2xi64>} : (tensor<1x3x3xf32>, tensor<2x3x3xf32>) -> tensor<1x2x3xf32>
    %narrow = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[1, 1]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 2>} : (tensor<1x3x3xf32>, tensor<2x3x3xf32>) -> tensor<1x2x1xf32>
    %pinned = "convc.conv"(%p, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[1, 1]]> : tensor<1x2xi64>, lowering = "xla"} : (tensor<1x3x1xf32>, tensor<2x3x3xf32>) -> tensor<1x2x1xf32>
    %dilated_input = "convc.conv"(%p, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0]->[b, f, 0]>, padding = dense<[[1, 1]]> : tensor<1x2xi64>, lhs_dilation = array<i64: 2>} : (tensor<1x3x1xf32>, tensor<2x3x3xf32>) -> tensor<1x2x1xf32>
    func.return %live, %narrow, %pinned, %dilated_input : tensor<1x2x3xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>
  }
}
