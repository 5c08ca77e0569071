// RUN: convc-opt %s -p resolve-padding --split-input-file | filecheck %s

// SAME / SAME_LOWER / VALID become explicit [lo, hi] rows, one per spatial dim in the
// kernel spec's spatial order, as lax.padtype_to_pads computes them on the dilated
// kernel: out = ceil(in / stride), total = max(0, (out - 1) * stride + window - in),
// the odd unit going high (SAME) or low (SAME_LOWER). Expected pads were worked out
// by hand and agree with jax.lax.padtype_to_pads.

// SAME, stride 1, 3x3 kernel on 8x8: one row and column each side.
// CHECK-LABEL: module @same_stride1
// CHECK: "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]> : tensor<2x2xi64>
// CHECK-SAME: -> tensor<1x8x8x8xf32>
module @same_stride1 {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}

// -----

// SAME, stride 2: total pad 1 per dim, the odd unit goes high.
// CHECK-LABEL: module @same_stride2
// CHECK: padding = dense<{{\[\[}}0, 1], [0, 1]]> : tensor<2x2xi64>
module @same_stride2 {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME", window_strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32>
    func.return %c : tensor<1x4x4x8xf32>
  }
}

// -----

// SAME_LOWER, stride 2: the same total, the odd unit goes low.
// CHECK-LABEL: module @same_lower_stride2
// CHECK: padding = dense<{{\[\[}}1, 0], [1, 0]]> : tensor<2x2xi64>
module @same_lower_stride2 {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME_LOWER", window_strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32>
    func.return %c : tensor<1x4x4x8xf32>
  }
}

// -----

// VALID: zero rows.
// CHECK-LABEL: module @valid
// CHECK: padding = dense<{{\[\[}}0, 0], [0, 0]]> : tensor<2x2xi64>
// CHECK-SAME: -> tensor<1x3x3x8xf32>
module @valid {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x3x3x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "VALID", window_strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x3x3x8xf32>
    func.return %c : tensor<1x3x3x8xf32>
  }
}

// -----

// No padding attribute means VALID, and is made explicit too.
// CHECK-LABEL: module @default_is_valid
// CHECK: {padding = dense<{{\[\[}}0, 0], [0, 0]]> : tensor<2x2xi64>}
module @default_is_valid {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
    %c = "convc.conv"(%x, %w) : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
    func.return %c : tensor<1x8x6x6xf32>
  }
}

// -----

// Dilated kernel: a 2-tap kernel with rhs_dilation 3 spans a window of 4, so H needs
// 3 rows of SAME padding (1 low, 2 high); W (2 taps, undilated) needs 1 (0 low, 1 high).
// CHECK-LABEL: module @same_dilated_kernel
// CHECK: padding = dense<{{\[\[}}1, 2], [0, 1]]> : tensor<2x2xi64>
module @same_dilated_kernel {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x2x2xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME", rhs_dilation = array<i64: 3, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}

// -----

// The same dilated kernel with SAME_LOWER: the odd units move low.
// CHECK-LABEL: module @same_lower_dilated_kernel
// CHECK: padding = dense<{{\[\[}}2, 1], [1, 0]]> : tensor<2x2xi64>
module @same_lower_dilated_kernel {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x2x2xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME_LOWER", rhs_dilation = array<i64: 3, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}

// -----

// Stride larger than the kernel: H (10, kernel 2, stride 3) needs one high row;
// W (9, kernel 1, stride 4) needs none, as the total is negative and clamps to 0.
// CHECK-LABEL: module @stride_beyond_kernel
// CHECK: padding = dense<{{\[\[}}0, 1], [0, 0]]> : tensor<2x2xi64>
// CHECK-SAME: -> tensor<1x8x4x3xf32>
module @stride_beyond_kernel {
  func.func @main(%x: tensor<1x4x10x9xf32>, %w: tensor<8x4x2x1xf32>) -> tensor<1x8x4x3xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME", window_strides = array<i64: 3, 4>} : (tensor<1x4x10x9xf32>, tensor<8x4x2x1xf32>) -> tensor<1x8x4x3xf32>
    func.return %c : tensor<1x8x4x3xf32>
  }
}

// -----

// 1-D, even kernel (4 taps): 3 pad units, SAME puts 2 high.
// CHECK-LABEL: module @conv1d_same
// CHECK: padding = dense<{{\[\[}}1, 2]]> : tensor<1x2xi64>
module @conv1d_same {
  func.func @main(%x: tensor<2x5x3xf32>, %w: tensor<4x3x6xf32>) -> tensor<2x5x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NWC", "WIO", "NWC"], padding = "SAME"} : (tensor<2x5x3xf32>, tensor<4x3x6xf32>) -> tensor<2x5x6xf32>
    func.return %c : tensor<2x5x6xf32>
  }
}

// -----

// 1-D, even kernel, SAME_LOWER puts 2 low.
// CHECK-LABEL: module @conv1d_same_lower
// CHECK: padding = dense<{{\[\[}}2, 1]]> : tensor<1x2xi64>
module @conv1d_same_lower {
  func.func @main(%x: tensor<2x5x3xf32>, %w: tensor<4x3x6xf32>) -> tensor<2x5x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NWC", "WIO", "NWC"], padding = "SAME_LOWER"} : (tensor<2x5x3xf32>, tensor<4x3x6xf32>) -> tensor<2x5x6xf32>
    func.return %c : tensor<2x5x6xf32>
  }
}

// -----

// 3-D with a different stride per dim: D (4, k3, s1) -> [1, 1]; H (5, k2, s2) -> [0, 1];
// W (6, k1, s3) -> [0, 0].
// CHECK-LABEL: module @conv3d_same
// CHECK: padding = dense<{{\[\[}}1, 1], [0, 1], [0, 0]]> : tensor<3x2xi64>
// CHECK-SAME: -> tensor<1x4x4x3x2xf32>
module @conv3d_same {
  func.func @main(%x: tensor<1x2x4x5x6xf32>, %w: tensor<4x2x3x2x1xf32>) -> tensor<1x4x4x3x2xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME", window_strides = array<i64: 1, 2, 3>} : (tensor<1x2x4x5x6xf32>, tensor<4x2x3x2x1xf32>) -> tensor<1x4x4x3x2xf32>
    func.return %c : tensor<1x4x4x3x2xf32>
  }
}

// -----

// Odd layout: rows follow the kernel's spatial order, W ("OWIH") before H. W (9,
// kernel 4, stride 2) -> [1, 2]; H (6, kernel 3, stride 1) -> [1, 1].
// CHECK-LABEL: module @odd_layout_rows_in_kernel_order
// CHECK: padding = dense<{{\[\[}}1, 2], [1, 1]]> : tensor<2x2xi64>
module @odd_layout_rows_in_kernel_order {
  func.func @main(%x: tensor<9x2x3x6xf32>, %w: tensor<6x4x2x3xf32>) -> tensor<6x6x5x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["WCNH", "OWIH", "HCWN"], padding = "SAME", window_strides = array<i64: 2, 1>} : (tensor<9x2x3x6xf32>, tensor<6x4x2x3xf32>) -> tensor<6x6x5x3xf32>
    func.return %c : tensor<6x6x5x3xf32>
  }
}

// -----

// With lhs_dilation, SAME is computed on the undilated input (lax.padtype_to_pads on
// the input shape; lax itself refuses string padding here): 5 -> [1, 1] at stride 2.
// CHECK-LABEL: module @same_with_lhs_dilation
// CHECK: padding = dense<{{\[\[}}1, 1], [1, 1]]> : tensor<2x2xi64>
// CHECK-SAME: -> tensor<1x8x5x5xf32>
module @same_with_lhs_dilation {
  func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x5x5xf32> {
    %c = "convc.conv"(%x, %w) {lhs_dilation = array<i64: 2, 2>, padding = "SAME", window_strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x5x5xf32>
    func.return %c : tensor<1x8x5x5xf32>
  }
}

// -----

// Explicit pads (negative ones crop) are kept as written.
// CHECK-LABEL: module @explicit_kept
// CHECK: padding = dense<{{\[\[}}-1, 2], [0, 3]]> : tensor<2x2xi64>
module @explicit_kept {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x7x9xf32> {
    %c = "convc.conv"(%x, %w) {padding = dense<[[-1, 2], [0, 3]]> : tensor<2x2xi64>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x7x9xf32>
    func.return %c : tensor<1x8x7x9xf32>
  }
}

// -----

// Two convs in a chain: each gets its own pads, operands and the relu are untouched.
// CHECK-LABEL: module @chain
// CHECK: func.func @main(%[[X:[^:]+]]: tensor<1x8x8x4xf32>, %[[W1:[^:]+]]: tensor<3x3x4x4xf32>, %[[W2:[^:]+]]: tensor<1x1x4x4xf32>)
// CHECK-NEXT: %[[C1:[^ ]+]] = "convc.conv"(%[[X]], %[[W1]])
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]> : tensor<2x2xi64>
// CHECK-NEXT: %[[R:[^ ]+]] = "convc.relu"(%[[C1]])
// CHECK-NEXT: %[[C2:[^ ]+]] = "convc.conv"(%[[R]], %[[W2]])
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]> : tensor<2x2xi64>
// CHECK-NEXT: func.return %[[C2]]
module @chain {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w1: tensor<3x3x4x4xf32>, %w2: tensor<1x1x4x4xf32>) -> tensor<1x8x8x4xf32> {
    %c1 = "convc.conv"(%x, %w1) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x8x8x4xf32>
    %r = "convc.relu"(%c1) : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %c2 = "convc.conv"(%r, %w2) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x8x8x4xf32>
    func.return %c2 : tensor<1x8x8x4xf32>
  }
}
