// RUN: convc-opt %s -p canonicalize-dimension-numbers --split-input-file | filecheck %s

// Layout strings become explicit dimension numbers in StableHLO's compact form:
// b/f (o/i for the kernel) mark batch and feature, digits the spatial dims in the
// kernel spec's order. Padding and other attributes are left alone.

// NHWC/HWIO/NHWC, the TensorFlow layout.
// CHECK-LABEL: module @nhwc_hwio
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%[[X:[^,]+]], %[[W:[^)]+]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// CHECK-SAME: padding = "SAME"
// CHECK-NEXT: func.return %[[C]]
module @nhwc_hwio {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}

// -----

// NCHW/OIHW/NCHW spelled out gives the same numbers as the default.
// CHECK-LABEL: module @nchw_oihw
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>
module @nchw_oihw {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
    func.return %c : tensor<1x8x6x6xf32>
  }
}

// -----

// No dimension_numbers at all: lax's default NC.../OI.../NC... is made explicit.
// CHECK-LABEL: module @default_layout
// CHECK: "convc.conv"
// CHECK-SAME: {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>}
module @default_layout {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
    %c = "convc.conv"(%x, %w) : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
    func.return %c : tensor<1x8x6x6xf32>
  }
}

// -----

// Odd permutations: spatial dims are numbered in the kernel's order (W before H
// in "OWIH"), so lhs "WCNH" reads [0, f, b, 1] and out "HCWN" reads [1, f, 0, b].
// CHECK-LABEL: module @odd_permutation
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[0, f, b, 1]x[o, 0, i, 1]->[1, f, 0, b]>
module @odd_permutation {
  func.func @main(%x: tensor<9x2x3x6xf32>, %w: tensor<6x4x2x3xf32>) -> tensor<4x6x6x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["WCNH", "OWIH", "HCWN"]} : (tensor<9x2x3x6xf32>, tensor<6x4x2x3xf32>) -> tensor<4x6x6x3xf32>
    func.return %c : tensor<4x6x6x3xf32>
  }
}

// -----

// 1-D conv: one spatial dim.
// CHECK-LABEL: module @conv1d_nwc
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>
module @conv1d_nwc {
  func.func @main(%x: tensor<2x9x3xf32>, %w: tensor<4x3x6xf32>) -> tensor<2x6x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NWC", "WIO", "NWC"]} : (tensor<2x9x3xf32>, tensor<4x3x6xf32>) -> tensor<2x6x6xf32>
    func.return %c : tensor<2x6x6xf32>
  }
}

// -----

// 3-D conv, channels-last.
// CHECK-LABEL: module @conv3d_ndhwc
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]>
module @conv3d_ndhwc {
  func.func @main(%x: tensor<1x4x5x6x2xf32>, %w: tensor<2x2x2x2x3xf32>) -> tensor<1x3x4x5x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NDHWC", "DHWIO", "NDHWC"]} : (tensor<1x4x5x6x2xf32>, tensor<2x2x2x2x3xf32>) -> tensor<1x3x4x5x3xf32>
    func.return %c : tensor<1x3x4x5x3xf32>
  }
}

// -----

// Already explicit numbers are left exactly as they are.
// CHECK-LABEL: module @already_explicit
// CHECK: dimension_numbers = #convc.dims<[f, 1, 0, b]x[i, o, 1, 0]->[b, 0, 1, f]>
module @already_explicit {
  func.func @main(%x: tensor<4x8x9x1xf32>, %w: tensor<4x6x3x2xf32>) -> tensor<1x8x6x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[f, 1, 0, b]x[i, o, 1, 0]->[b, 0, 1, f]>} : (tensor<4x8x9x1xf32>, tensor<4x6x3x2xf32>) -> tensor<1x8x6x6xf32>
    func.return %c : tensor<1x8x6x6xf32>
  }
}

// -----

// Only convs change: the transpose keeps its attributes and no op gains dimension numbers.
// CHECK-LABEL: module @non_conv_untouched
// CHECK: "convc.transpose"(%{{[^)]+}}) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: dimension_numbers
// CHECK: func.return
module @non_conv_untouched {
  func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x8x8xf32> {
    %t = "convc.transpose"(%x) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x8x8xf32>
    func.return %t : tensor<1x4x8x8xf32>
  }
}
