// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per sum_pool diagnostic (compiler/ops/pool.py), named after the StableHLO
// reduce_window constraint (or lax rule, L1) it breaks. C15 (the result shape) is
// inferred: a written one that differs is A5 (verify-ir.mlir).
// STATUS-NOT: Traceback
// STATUS-COUNT-12: {{^}}{{.*}}verify-sum-pool.mlir:{{[0-9]+}}:5: error: 'r' (sum_pool): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 12{{$}}

// sum_pool.C4: one window dimension per dimension of x.
module @c4_window_size {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): window_dimensions has 2 entries, expected 4 (one per dimension) [sum_pool.C4]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C5: window dimensions are positive.
module @c5_window_positive {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): window_dimensions must be positive, got [1, 0, 2, 1] [sum_pool.C5]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 0, 2, 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C6: one stride per dimension.
module @c6_strides_size {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): window_strides has 2 entries, expected 4 (one per dimension) [sum_pool.C6]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C7: strides are positive.
module @c7_strides_positive {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): window_strides must be positive, got [1, 0, 1, 1] [sum_pool.C7]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 0, 1, 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C8: one base dilation per dimension.
module @c8_base_dilation_size {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): base_dilation has 1 entries, expected 4 (one per dimension) [sum_pool.C8]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, base_dilation = array<i64: 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C9: base dilations are positive.
module @c9_base_dilation_positive {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): base_dilation must be positive, got [1, -1, 1, 1] [sum_pool.C9]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, base_dilation = array<i64: 1, -1, 1, 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C10: one window dilation per dimension.
module @c10_window_dilation_size {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): window_dilation has 3 entries, expected 4 (one per dimension) [sum_pool.C10]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, window_dilation = array<i64: 1, 2, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C11: window dilations are positive.
module @c11_window_dilation_positive {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): window_dilation must be positive, got [1, 1, 0, 1] [sum_pool.C11]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, window_dilation = array<i64: 1, 1, 0, 1>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C12: one [lo, hi] padding row per dimension.
module @c12_padding_rows {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): padding has 2 [lo, hi] pairs, expected 4 (one per dimension) [sum_pool.C12]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C12: padding rows are [lo, hi] pairs.
module @c12_padding_row_width {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): padding rows must have 2 integers [lo, hi], got [0, 0, 0] [sum_pool.C12]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]> : tensor<4x3xi64>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.C12: a padding mode is SAME, SAME_LOWER or VALID.
module @c12_padding_mode {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): padding must be one of SAME, SAME_LOWER, VALID or [[lo, hi], ...], got 'FULL' [sum_pool.C12]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2, 2, 1>, padding = "FULL"} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}

// -----

// sum_pool.L1 (lax): padding may crop, not below size 0.
module @l1_padding_negative {
  func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'r' (sum_pool): padding (-3, -3) makes dimension 1 negative: dilated input size 4, padded size -2 [sum_pool.L1]}}
    %r = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [-3, -3], [0, 0], [0, 0]]> : tensor<4x2xi64>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %r : tensor<1x3x3x2xf32>
  }
}
