// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per max_pool_grad diagnostic (compiler/ops/pool_grad.py), named after the
// StableHLO select_and_scatter constraint (or lax / jax rule, L1 and L2) it breaks. C11 and
// C12 (the result is x's type) are inferred: a written one that differs is A5 (verify-ir.mlir).
// STATUS-NOT: Traceback
// STATUS-COUNT-11: {{^}}{{.*}}verify-max-pool-grad.mlir:{{[0-9]+}}:5: error: 'd' (max_pool_grad): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 11{{$}}

// max_pool_grad.C1: x and out_grad have one element type.
module @c1_element_types {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf16>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): element types differ: x is f32, out_grad f16 [max_pool_grad.C1]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf16>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C2: out_grad has one element per window of x (here 3x3 windows, not 2x2).
module @c2_out_grad_shape {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): out_grad has shape [1, 2, 2, 2], expected [1, 3, 3, 2] (one element per window of x) [max_pool_grad.C2]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>} : (tensor<1x4x4x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C4: one window dimension per dimension of x.
module @c4_window_size {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): window_dimensions has 2 entries, expected 4 (one per dimension) [max_pool_grad.C4]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C5: window dimensions are positive.
module @c5_window_positive {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): window_dimensions must be positive, got [1, 0, 2, 1] [max_pool_grad.C5]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 0, 2, 1>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C6: one stride per dimension.
module @c6_strides_size {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): window_strides has 3 entries, expected 4 (one per dimension) [max_pool_grad.C6]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C7: strides are positive.
module @c7_strides_positive {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): window_strides must be positive, got [1, -2, 1, 1] [max_pool_grad.C7]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, -2, 1, 1>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C8: one [lo, hi] padding row per dimension.
module @c8_padding_rows {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): padding has 3 [lo, hi] pairs, expected 4 (one per dimension) [max_pool_grad.C8]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0], [1, 1], [1, 1]]> : tensor<3x2xi64>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C8: padding rows are [lo, hi] pairs.
module @c8_padding_row_width {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): padding rows must have 2 integers [lo, hi], got [0, 0, 0] [max_pool_grad.C8]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]> : tensor<4x3xi64>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.C8: a padding mode is SAME, SAME_LOWER or VALID.
module @c8_padding_mode {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): padding must be one of SAME, SAME_LOWER, VALID or [[lo, hi], ...], got 'FULL' [max_pool_grad.C8]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>, padding = "FULL"} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.L1 (lax): padding may crop, not below size 0.
module @l1_padding_negative {
  func.func @main(%x: tensor<1x4x4x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'d' (max_pool_grad): padding (-3, -2) makes dimension 2 negative: input size 4, padded size -1 [max_pool_grad.L1]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [0, 0], [-3, -2], [0, 0]]> : tensor<4x2xi64>} : (tensor<1x4x4x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %d : tensor<1x4x4x2xf32>
  }
}

// -----

// max_pool_grad.L2 (jax.vjp): a gradient is of floating values.
module @l2_floating {
  func.func @main(%x: tensor<1x4x4x2xi32>, %g: tensor<1x3x3x2xi32>) -> tensor<1x4x4x2xi32> {
    // expected-error@+1 {{'d' (max_pool_grad): max_pool_grad needs floating operands, got i32 [max_pool_grad.L2]}}
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 2, 2, 1>} : (tensor<1x4x4x2xi32>, tensor<1x3x3x2xi32>) -> tensor<1x4x4x2xi32>
    func.return %d : tensor<1x4x4x2xi32>
  }
}
