// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per diagnostic of the plain tensor ops (compiler/ops/tensor.py), each a
// single line located at the op. The whole file exits 1 with exactly those lines.
// STATUS-NOT: Traceback
// STATUS-COUNT-29: {{^}}{{.*}}verify-tensor-ops.mlir:{{[0-9]+}}:5: error: 'r' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 29{{$}}

// constant: `value` is required.
module @constant_value_required {
  func.func @main() -> tensor<2xf32> {
    // expected-error@+1 {{'r' (constant): attribute 'value' is required [A2]}}
    %r = "convc.constant"() : () -> tensor<2xf32>
    func.return %r : tensor<2xf32>
  }
}

// -----

// constant: only convc's element types (ui16 is not one).
module @constant_element_type {
  func.func @main() -> tensor<2xi32> {
    // expected-error@+1 {{'r' (constant): constant has unsupported element type uint16 [constant.C1]}}
    %r = "convc.constant"() {value = dense<1> : tensor<2xui16>} : () -> tensor<2xi32>
    func.return %r : tensor<2xi32>
  }
}

// -----

// add (and multiply): both operands have one type.
module @add_operand_types {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (add): operand types differ: tensor<2x3xf32> and tensor<3x2xf32> [add.C1]}}
    %r = "convc.add"(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// bias_add: axis is a dimension of x.
module @bias_add_axis_range {
  func.func @main(%x: tensor<1x2x2x3xf32>, %b: tensor<3xf32>) -> tensor<1x2x2x3xf32> {
    // expected-error@+1 {{'r' (bias_add): axis 4 is out of range for rank 4 [bias_add.C1]}}
    %r = "convc.bias_add"(%x, %b) {axis = 4 : i64} : (tensor<1x2x2x3xf32>, tensor<3xf32>) -> tensor<1x2x2x3xf32>
    func.return %r : tensor<1x2x2x3xf32>
  }
}

// -----

// bias_add: the bias is a vector as long as x's `axis` dimension.
module @bias_add_bias_shape {
  func.func @main(%x: tensor<1x2x2x3xf32>, %b: tensor<5xf32>) -> tensor<1x2x2x3xf32> {
    // expected-error@+1 {{'r' (bias_add): bias must have shape [3] (dimension 3 of tensor<1x2x2x3xf32>), got tensor<5xf32> [bias_add.C2]}}
    %r = "convc.bias_add"(%x, %b) : (tensor<1x2x2x3xf32>, tensor<5xf32>) -> tensor<1x2x2x3xf32>
    func.return %r : tensor<1x2x2x3xf32>
  }
}

// -----

// bias_add: a bias that fits another dimension (channels-first data, an NCHW conv's result) without `axis`: the hint names it.
module @bias_add_axis_hint {
  func.func @main(%x: tensor<1x2x3x3xf32>, %b: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
    // expected-error@+1 {{'r' (bias_add): bias must have shape [3] (dimension 3 of tensor<1x2x3x3xf32>), got tensor<2xf32>; it fits dimension 1: give axis=1 (the default, -1, is the last dimension: channels last) [bias_add.C2]}}
    %r = "convc.bias_add"(%x, %b) : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
    func.return %r : tensor<1x2x3x3xf32>
  }
}

// -----

// bias_add: the bias has x's element type.
module @bias_add_bias_element_type {
  func.func @main(%x: tensor<1x2x2x3xf32>, %b: tensor<3xf16>) -> tensor<1x2x2x3xf32> {
    // expected-error@+1 {{'r' (bias_add): bias element type f16 differs from input element type f32 [bias_add.C3]}}
    %r = "convc.bias_add"(%x, %b) : (tensor<1x2x2x3xf32>, tensor<3xf16>) -> tensor<1x2x2x3xf32>
    func.return %r : tensor<1x2x2x3xf32>
  }
}

// -----

// relu (every fixed-arity op): the declared number of operands.
module @relu_operand_count {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (relu): 'relu' takes 1 inputs (x), got 2 [A4]}}
    %r = "convc.relu"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// reshape: sizes are non-negative.
module @reshape_negative_size {
  func.func @main(%x: tensor<4xf32>) -> tensor<2x2xf32> {
    // expected-error@+1 {{'r' (reshape): new_sizes must be non-negative, got [-2, -2] [reshape.M1]}}
    %r = "convc.reshape"(%x) {new_sizes = array<i64: -2, -2>} : (tensor<4xf32>) -> tensor<2x2xf32>
    func.return %r : tensor<2x2xf32>
  }
}

// -----

// reshape: the element count is kept.
module @reshape_element_count {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
    // expected-error@+1 {{'r' (reshape): cannot reshape tensor<2x3xf32> (6 elements) to [4, 2] [reshape.C2]}}
    %r = "convc.reshape"(%x) {new_sizes = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
    func.return %r : tensor<4x2xf32>
  }
}

// -----

// transpose: the permutation names each dimension once.
module @transpose_permutation {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
    // expected-error@+1 {{'r' (transpose): permutation [0, 0] is not a permutation of 0..1 [transpose.C2]}}
    %r = "convc.transpose"(%x) {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
    func.return %r : tensor<2x2xf32>
  }
}

// -----

// reverse: dimensions are in range.
module @reverse_dimension_range {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (reverse): dimensions has dimension 2 out of range for rank 2 [reverse.C3]}}
    %r = "convc.reverse"(%x) {dimensions = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// reverse: dimensions are not repeated.
module @reverse_dimension_repeated {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (reverse): dimensions [1, 1] repeats a dimension [reverse.C2]}}
    %r = "convc.reverse"(%x) {dimensions = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// pad: one [lo, hi, interior] row per dimension.
module @pad_row_count {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
    // expected-error@+1 {{'r' (pad): padding_config has 1 rows, expected 2 (one per dimension) [pad.C2]}}
    %r = "convc.pad"(%x) {padding_config = dense<[[1, 1, 0]]> : tensor<1x3xi64>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    func.return %r : tensor<4x3xf32>
  }
}

// -----

// pad: rows have three entries.
module @pad_row_width {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
    // expected-error@+1 {{'r' (pad): padding_config rows must have 3 integers [lo, hi, interior], got [1, 1] [A1]}}
    %r = "convc.pad"(%x) {padding_config = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    func.return %r : tensor<4x3xf32>
  }
}

// -----

// pad: interior padding is non-negative.
module @pad_interior_negative {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
    // expected-error@+1 {{'r' (pad): interior padding must be non-negative, got -1 for dimension 0 [pad.C3]}}
    %r = "convc.pad"(%x) {padding_config = dense<[[0, 0, -1], [0, 0, 0]]> : tensor<2x3xi64>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
    func.return %r : tensor<1x3xf32>
  }
}

// -----

// pad: negative lo/hi may crop, but not below size 0.
module @pad_negative_result {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x0xf32> {
    // expected-error@+1 {{'r' (pad): padding [-2, -2, 0] makes dimension 1 (size 3) negative [pad.C4]}}
    %r = "convc.pad"(%x) {padding_config = dense<[[0, 0, 0], [-2, -2, 0]]> : tensor<2x3xi64>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
    func.return %r : tensor<2x0xf32>
  }
}

// -----

// pad (every op, A6): each result dimension is at most 2^31 - 1.
module @pad_result_too_large {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    // expected-error@+1 {{'r' (pad): result shape [2147483649] is too large: dimension 0 is over 2147483647 [A6]}}
    %r = "convc.pad"(%x) {padding_config = dense<[[2147483647, 0, 0]]> : tensor<1x3xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    func.return %r : tensor<2xf32>
  }
}

// -----

// pad: padding_value is a number.
module @pad_value_number {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
    // expected-error@+1 {{'r' (pad): padding_value must be a number, got 'zero' [A1]}}
    %r = "convc.pad"(%x) {padding_config = dense<[[1, 1, 0], [0, 0, 0]]> : tensor<2x3xi64>, padding_value = "zero"} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    func.return %r : tensor<4x3xf32>
  }
}

// -----

// slice: one start, limit and stride per dimension.
module @slice_index_count {
  func.func @main(%x: tensor<4x4xf32>) -> tensor<2x2xf32> {
    // expected-error@+1 {{'r' (slice): start_indices has 1 entries, expected 2 [slice.C2]}}
    %r = "convc.slice"(%x) {start_indices = array<i64: 0>, limit_indices = array<i64: 2, 2>} : (tensor<4x4xf32>) -> tensor<2x2xf32>
    func.return %r : tensor<2x2xf32>
  }
}

// -----

// slice: strides are positive.
module @slice_stride_positive {
  func.func @main(%x: tensor<4x4xf32>) -> tensor<2x2xf32> {
    // expected-error@+1 {{'r' (slice): strides must be positive, got [1, 0] [slice.C4]}}
    %r = "convc.slice"(%x) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 2, 2>, strides = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<2x2xf32>
    func.return %r : tensor<2x2xf32>
  }
}

// -----

// slice: 0 <= start <= limit <= size.
module @slice_bounds {
  func.func @main(%x: tensor<4x4xf32>) -> tensor<2x2xf32> {
    // expected-error@+1 {{'r' (slice): slice [3, 5) is out of bounds for dimension 1 of size 4 [slice.C3]}}
    %r = "convc.slice"(%x) {start_indices = array<i64: 0, 3>, limit_indices = array<i64: 2, 5>} : (tensor<4x4xf32>) -> tensor<2x2xf32>
    func.return %r : tensor<2x2xf32>
  }
}

// -----

// concatenate: at least one operand.
module @concatenate_no_inputs {
  func.func @main(%x: tensor<4xf32>) -> tensor<0xf32> {
    // expected-error@+1 {{'r' (concatenate): 'concatenate' takes at least one input, got none [A4]}}
    %r = "convc.concatenate"() {dimension = 0 : i64} : () -> tensor<0xf32>
    func.return %r : tensor<0xf32>
  }
}

// -----

// concatenate: the dimension is in range.
module @concatenate_dimension_range {
  func.func @main(%x: tensor<4xf32>) -> tensor<8xf32> {
    // expected-error@+1 {{'r' (concatenate): dimension 1 is out of range for rank 1 [concatenate.C4]}}
    %r = "convc.concatenate"(%x, %x) {dimension = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
    func.return %r : tensor<8xf32>
  }
}

// -----

// concatenate: operands agree outside the dimension.
module @concatenate_operand_shapes {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
    // expected-error@+1 {{'r' (concatenate): operand 1 of type tensor<3x3xf32> does not match tensor<2x3xf32> outside dimension 1 [concatenate.C2]}}
    %r = "convc.concatenate"(%a, %b) {dimension = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
    func.return %r : tensor<2x6xf32>
  }
}

// -----

// concatenate: operands have one element type.
module @concatenate_operand_element_types {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
    // expected-error@+1 {{'r' (concatenate): operand 1 of type tensor<2x3xf16> does not match tensor<2x3xf32> outside dimension 1 [concatenate.C1]}}
    %r = "convc.concatenate"(%a, %b) {dimension = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
    func.return %r : tensor<2x6xf32>
  }
}

// -----

// convert: new_dtype is required.
module @convert_new_dtype_required {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf16> {
    // expected-error@+1 {{'r' (convert): attribute 'new_dtype' is required [A2]}}
    %r = "convc.convert"(%x) : (tensor<4xf32>) -> tensor<4xf16>
    func.return %r : tensor<4xf16>
  }
}

// -----

// convert: new_dtype is a dtype convc knows.
module @convert_new_dtype_known {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf16> {
    // expected-error@+1 {{'r' (convert): new_dtype must be a dtype (f32, f16, bf16, f64, i8, i16, i32, i64, ui8), got 'complex64' [A1]}}
    %r = "convc.convert"(%x) {new_dtype = "complex64"} : (tensor<4xf32>) -> tensor<4xf16>
    func.return %r : tensor<4xf16>
  }
}

// -----

// stacked_reduce_sum: every input has the first one's type.
module @stacked_reduce_sum_operand_types {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (stacked_reduce_sum): operand 1 of type tensor<2x4xf32> does not match operand 0 of type tensor<2x3xf32> [stacked_reduce_sum.C1]}}
    %r = "convc.stacked_reduce_sum"(%a, %b) {axes = array<i64: 0>} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}
