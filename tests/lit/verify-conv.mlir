// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per conv diagnostic. Each breaks one rule and is reported as one line,
// located at the op, naming the StableHLO `convolution` constraint (C..), lax rule
// (L..) or MLIR verifier rule (M..) it breaks. The whole file exits 1, prints nothing but those lines, and no
// traceback.
// STATUS-NOT: Traceback
// STATUS-COUNT-46: {{^}}{{.*}}verify-conv.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'c' (conv): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 46{{$}}
//
// Constraints with no case here, and why:
// - C9 (size(window_reversal) = N - 2): convc's conv has no window_reversal
//   attribute (lax never sets it); naming one is an unknown-attribute error.
// - C13/C18/C20 for explicit #convc.dims numbers: the compact form cannot spell a
//   non-permutation; a repeated or missing label is a parse error (verify-ir.mlir).
// - C28..C34 are about quantized types, which convc does not have.

// ===== StableHLO convolution constraints, lax and MLIR verifier rules =====

// C1: lhs and rhs must have the same rank.
module @c1_rank_mismatch {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs rank 4 and rhs rank 3 differ [C1]}}
    %c = "convc.conv"(%x, %w) : (tensor<2x4x8x8xf32>, tensor<6x4x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C1: a conv needs at least a batch and a feature dimension.
module @c1_rank_too_small {
  func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'c' (conv): operands must have rank at least 2, got 1 [C1]}}
    %c = "convc.conv"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %c : tensor<4xf32>
  }
}

// -----

// C2: one window stride per spatial dimension.
module @c2_strides_size {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): window_strides has 1 entries, expected 2 (one per spatial dimension) [C2]}}
    %c = "convc.conv"(%x, %w) {window_strides = array<i64: 2>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C3: window strides are positive.
module @c3_strides_positive {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): window_strides must be positive, got [0, 1] [C3]}}
    %c = "convc.conv"(%x, %w) {window_strides = array<i64: 0, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C4: one [lo, hi] padding row per spatial dimension.
module @c4_padding_rows {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): padding has 1 [lo, hi] pairs, expected 2 (one per spatial dimension) [C4]}}
    %c = "convc.conv"(%x, %w) {padding = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C4: padding rows are [lo, hi] pairs.
module @c4_padding_row_width {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): padding rows must have 2 integers [lo, hi], got [0, 0, 0] [C4]}}
    %c = "convc.conv"(%x, %w) {padding = dense<[[0, 0, 0], [0, 0, 0]]> : tensor<2x3xi64>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C5: one lhs dilation per spatial dimension.
module @c5_lhs_dilation_size {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs_dilation has 1 entries, expected 2 (one per spatial dimension) [C5]}}
    %c = "convc.conv"(%x, %w) {lhs_dilation = array<i64: 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C6: lhs dilations are positive.
module @c6_lhs_dilation_positive {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs_dilation must be positive, got [1, -1] [C6]}}
    %c = "convc.conv"(%x, %w) {lhs_dilation = array<i64: 1, -1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C7: one rhs dilation per spatial dimension.
module @c7_rhs_dilation_size {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs_dilation has 3 entries, expected 2 (one per spatial dimension) [C7]}}
    %c = "convc.conv"(%x, %w) {rhs_dilation = array<i64: 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C8: rhs dilations are positive.
module @c8_rhs_dilation_positive {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs_dilation must be positive, got [0, 1] [C8]}}
    %c = "convc.conv"(%x, %w) {rhs_dilation = array<i64: 0, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C10: batch_group_count divides the lhs batch (2 by 3).
module @c10_batch_groups_divide_batch {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs batch dimension 2 is not divisible by batch_group_count 3 [C10]}}
    %c = "convc.conv"(%x, %w) {batch_group_count = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C11: feature_group_count divides the lhs features (4 by 3).
module @c11_feature_groups_divide_features {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs feature dimension 4 is not divisible by feature_group_count 3 [C11]}}
    %c = "convc.conv"(%x, %w) {feature_group_count = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C12: the lhs layout names every lhs dimension.
module @c12_lhs_layout_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs layout 'NCH' has 3 dimensions but the operands have rank 4 [C12]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCH", "OIHW", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C12: explicit lhs dimension numbers cover every lhs dimension.
module @c12_lhs_numbers_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs dimension numbers [0, 1, 2] have 3 entries but the operands have rank 4 [C12]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C13: the lhs layout has exactly one N and one C.
module @c13_lhs_layout_batch_feature {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs layout 'NNHW' must contain 'N' and 'C' exactly once [C13]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NNHW", "OIHW", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C13: a lowercase layout names no batch or feature dimension (lowercase letters are spatial); the hint spells it uppercase.
module @c13_lowercase_layout {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs layout 'nchw' must contain 'N' and 'C' exactly once; layout letters are uppercase: 'NCHW' [C13]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["nchw", "OIHW", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C13: lhs layout letters are unique.
module @c13_lhs_layout_repeats {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): lhs layout 'NCHH' repeats a dimension letter [C13]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHH", "OIHW", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C14: kernel input features = lhs features / feature_group_count (4 != 4 / 2).
module @c14_kernel_input_features {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs input feature dimension 4 must equal lhs feature dimension 4 / feature_group_count 2 = 2 [C14]}}
    %c = "convc.conv"(%x, %w) {feature_group_count = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C15: batch_group_count divides the kernel output features (6 by 4).
module @c15_batch_groups_divide_kernel_outputs {
  func.func @main(%x: tensor<4x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs output feature dimension 6 is not divisible by batch_group_count 4 [C15]}}
    %c = "convc.conv"(%x, %w) {batch_group_count = 4 : i64} : (tensor<4x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
    func.return %c : tensor<1x6x6x6xf32>
  }
}

// -----

// C16: feature_group_count divides the kernel output features (6 by 4).
module @c16_feature_groups_divide_kernel_outputs {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs output feature dimension 6 is not divisible by feature_group_count 4 [C16]}}
    %c = "convc.conv"(%x, %w) {feature_group_count = 4 : i64} : (tensor<2x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C17: the rhs layout names every rhs dimension.
module @c17_rhs_layout_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs layout 'OIH' has 3 dimensions but the operands have rank 4 [C17]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIH", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C17: explicit rhs dimension numbers cover every rhs dimension.
module @c17_rhs_numbers_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs dimension numbers [0, 1, 2] have 3 entries but the operands have rank 4 [C17]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0]->[b, f, 0, 1]>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C18: the rhs layout has exactly one O and one I.
module @c18_rhs_layout_output_input {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs layout 'OOHW' must contain 'O' and 'I' exactly once [C18]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OOHW", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C18: rhs layout letters are unique.
module @c18_rhs_layout_repeats {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs layout 'OIWW' repeats a dimension letter [C18]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIWW", "NCHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C19: the out layout names every result dimension.
module @c19_out_layout_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): out layout 'NCHWD' has 5 dimensions but the operands have rank 4 [C19]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHWD"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C19: explicit out dimension numbers cover every result dimension.
module @c19_out_numbers_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): out dimension numbers [0, 1, 2, 3, 4] have 5 entries but the operands have rank 4 [C19]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1, 2]>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C20: the out layout has exactly one N and one C.
module @c20_out_layout_batch_feature {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): out layout 'NHWX' must contain 'N' and 'C' exactly once [C20]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NHWX"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C20: out layout letters are unique.
module @c20_out_layout_repeats {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): out layout 'NCHH' repeats a dimension letter [C20]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHH"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C21: feature_group_count is positive.
module @c21_feature_groups_positive {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): feature_group_count must be positive, got 0 [C21]}}
    %c = "convc.conv"(%x, %w) {feature_group_count = 0 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C22: batch_group_count is positive.
module @c22_batch_groups_positive {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): batch_group_count must be positive, got -1 [C22]}}
    %c = "convc.conv"(%x, %w) {batch_group_count = -1 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C23: feature and batch groups cannot both exceed 1.
module @c23_one_kind_of_group {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): feature_group_count 2 and batch_group_count 2 cannot both exceed 1 [C23]}}
    %c = "convc.conv"(%x, %w) {batch_group_count = 2 : i64, feature_group_count = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C24: precision is one value or a pair (lhs, rhs).
module @c24_precision_pair {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): precision must be a precision or a pair of them, got ['HIGH', 'HIGH', 'HIGH'] [C24]}}
    %c = "convc.conv"(%x, %w) {precision = ["HIGH", "HIGH", "HIGH"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// C27: lhs and rhs have one element type.
module @c27_element_types {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf16>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): element types differ: f32 and f16 [C27]}}
    %c = "convc.conv"(%x, %w) : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf16>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// L1 (lax): lhs, rhs and out layouts name the same spatial dimensions.
module @l1_spatial_letters {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): out layout 'NCWD' and rhs layout 'OIHW' name different spatial dimensions [L1]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCWD"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// L2 (lax): negative padding may crop, but not below an empty dimension.
module @l2_padding_not_negative {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): padding (-5, -5) makes spatial dimension 0 negative: dilated input size 8, padded size -2 [L2]}}
    %c = "convc.conv"(%x, %w) {padding = dense<[[-5, -5], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// M1 (MLIR's verifier): kernel spatial sizes are positive; an empty window is refused.
module @m1_window_not_empty {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x0x3xf32>) -> tensor<2x6x9x6xf32> {
    // expected-error@+1 {{'c' (conv): rhs spatial dimensions [0, 3] must be positive: a conv window cannot be empty [M1]}}
    %c = "convc.conv"(%x, %w) : (tensor<2x4x8x8xf32>, tensor<6x4x0x3xf32>) -> tensor<2x6x9x6xf32>
    func.return %c : tensor<2x6x9x6xf32>
  }
}

// -----

// ===== C25/C26: the result type =====
// convc infers a conv's result type; a written type that differs is reported
// under C26 when its rank differs, C25 when its sizes do (C27: its element type).

// C25: the result's spatial sizes are the number of windows (6, declared 5).
module @c25_result_spatial_size {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x5x6xf32> {
    // expected-error@+1 {{'c' (conv): result type tensor<2x6x5x6xf32> does not match the inferred type tensor<2x6x6x6xf32> [C25]}}
    %c = "convc.conv"(%x, %w) : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x6xf32>
    func.return %c : tensor<2x6x5x6xf32>
  }
}

// -----

// C26: the result has the operands' rank.
module @c26_result_rank {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x36xf32> {
    // expected-error@+1 {{'c' (conv): result type tensor<2x6x36xf32> does not match the inferred type tensor<2x6x6x6xf32> [C26]}}
    %c = "convc.conv"(%x, %w) : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x36xf32>
    func.return %c : tensor<2x6x36xf32>
  }
}

// -----

// ===== Attribute values (checked before the constraints; no constraint id) =====

// An unknown attribute name, with the closest known one suggested.
module @unknown_attribute {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): unknown attribute 'window_stride' for op 'conv' (did you mean 'window_strides'?) [A3]}}
    %c = "convc.conv"(%x, %w) {window_stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// Another framework's name for an attribute (ONNX's and TF's `strides`): the hint says what convc calls it.
module @foreign_attribute {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): unknown attribute 'strides' for op 'conv' (did you mean 'window_strides'? 'strides' is its name in ONNX, TensorFlow and Keras; one entry per spatial dimension) [A3]}}
    %c = "convc.conv"(%x, %w) {strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// window_strides is a list of integers, not one.
module @strides_not_a_list {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): window_strides must be a list of integers, got 2 [A1]}}
    %c = "convc.conv"(%x, %w) {window_strides = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// feature_group_count is an integer.
module @group_count_not_an_integer {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): feature_group_count must be an integer, got 'two' [A1]}}
    %c = "convc.conv"(%x, %w) {feature_group_count = "two"} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// padding is SAME, SAME_LOWER, VALID or explicit rows.
module @padding_unknown_mode {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): padding must be one of SAME, SAME_LOWER, VALID or [[lo, hi], ...], got 'FULL' [C4]}}
    %c = "convc.conv"(%x, %w) {padding = "FULL"} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// dimension_numbers as layouts is exactly [lhs, rhs, out].
module @layouts_not_three {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): dimension_numbers must be three layout strings [lhs, rhs, out], got ['NCHW', 'OIHW'] [A1]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW"]} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// precision values are DEFAULT, HIGH or HIGHEST.
module @precision_unknown {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): precision must be one of DEFAULT, HIGH, HIGHEST or a pair of them, got 'FAST' [C24]}}
    %c = "convc.conv"(%x, %w) {precision = "FAST"} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}

// -----

// preferred_element_type is a dtype convc knows.
module @preferred_element_type_unknown {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
    // expected-error@+1 {{'c' (conv): preferred_element_type must be a dtype (f32, f16, bf16, f64, i8, i16, i32, i64, ui8) or a !quant.uniform<...> type, got 'int4' [A1]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "int4"} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
    func.return %c : tensor<2x6x6x6xf32>
  }
}
