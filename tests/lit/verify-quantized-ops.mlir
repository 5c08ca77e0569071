// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per rule of uniform_quantize, uniform_dequantize, bitcast_convert and of conv on quantized
// types (the spec's convolution C28-C34, and its input I1: lhs is per-tensor at most).
// STATUS-NOT: Traceback
// STATUS-COUNT-16: {{^}}{{.*}}verify-quantized-ops.mlir:{{[0-9]+}}:5: error: '{{[a-z]+}}' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 16{{$}}

module @quantize_operand_float_or_quantized {
  func.func @main(%x: tensor<4xi32>) -> tensor<4x!quant.uniform<i8:f32, 0.5>> {
    // expected-error@+1 {{'q' (uniform_quantize): uniform_quantize takes a floating-point or quantized tensor, got tensor<4xi32> [uniform_quantize.I1]}}
    %q = "convc.uniform_quantize"(%x) {new_dtype = "!quant.uniform<i8:f32, 0.5>"} : (tensor<4xi32>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
    func.return %q : tensor<4x!quant.uniform<i8:f32, 0.5>>
  }
}

// -----

module @quantize_result_quantized {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xi8> {
    // expected-error@+1 {{'q' (uniform_quantize): new_dtype must be a quantized type (!quant.uniform<...>), got i8 [uniform_quantize.O1]}}
    %q = "convc.uniform_quantize"(%x) {new_dtype = i8} : (tensor<4xf32>) -> tensor<4xi8>
    func.return %q : tensor<4xi8>
  }
}

// -----

module @quantize_expressed_type {
  func.func @main(%x: tensor<4xf16>) -> tensor<4x!quant.uniform<i8:f32, 0.5>> {
    // expected-error@+1 {{'q' (uniform_quantize): the result's expressed type f32 must be the operand's element type f16 [uniform_quantize.C2]}}
    %q = "convc.uniform_quantize"(%x) {new_dtype = "!quant.uniform<i8:f32, 0.5>"} : (tensor<4xf16>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
    func.return %q : tensor<4x!quant.uniform<i8:f32, 0.5>>
  }
}

// -----

module @dequantize_operand_quantized {
  func.func @main(%x: tensor<4xi8>) -> tensor<4xf32> {
    // expected-error@+1 {{'d' (uniform_dequantize): uniform_dequantize takes a quantized tensor, got tensor<4xi8> [uniform_dequantize.I1]}}
    %d = "convc.uniform_dequantize"(%x) : (tensor<4xi8>) -> tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
}

// -----

module @conv_lhs_per_tensor {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32:1, {0.5, 0.5}>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>> {
    // expected-error@+1 {{'c' (conv): lhs must be a tensor or a per-tensor quantized tensor, got tensor<1x2x4x4x!quant.uniform<i8:f32:1, {5.000000e-01,5.000000e-01}>> [I1]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "!quant.uniform<i8:f32, 0.5>"} : (tensor<1x2x4x4x!quant.uniform<i8:f32:1, {0.5, 0.5}>>, tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>
    func.return %c : tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>
  }
}

// -----

module @conv_quantized_lhs_needs_quantized_result {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2xf32> {
    // expected-error@+1 {{'c' (conv): a quantized lhs needs a quantized rhs and result; the result (preferred_element_type, a !quant.uniform type) is not [C28]}}
    %c = "convc.conv"(%x, %w) : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2xf32>
    func.return %c : tensor<1x3x2x2xf32>
  }
}

// -----

module @conv_rhs_axis_is_output_features {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:1, {0.5, 0.5}>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>> {
    // expected-error@+1 {{'c' (conv): a per-axis rhs is quantized along its output feature dimension 0, not 1 [C29]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "!quant.uniform<i8:f32, 0.5>"} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x3x3x!quant.uniform<i8:f32:1, {0.5, 0.5}>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>
    func.return %c : tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>
  }
}

// -----

module @conv_result_axis_is_features {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, %w: tensor<2x2x3x3x!quant.uniform<i8:f32:0, {0.5, 0.5}>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32:2, {0.5, 0.5}>> {
    // expected-error@+1 {{'c' (conv): a per-axis result is quantized along its feature dimension 1, not 2 [C30]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "!quant.uniform<i8:f32:2, {0.5, 0.5}>"} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x3x3x!quant.uniform<i8:f32:0, {0.5, 0.5}>>) -> tensor<1x2x2x2x!quant.uniform<i8:f32:2, {0.5, 0.5}>>
    func.return %c : tensor<1x2x2x2x!quant.uniform<i8:f32:2, {0.5, 0.5}>>
  }
}

// -----

module @conv_storage_types_agree {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<u8:f32, 0.5>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>> {
    // expected-error@+1 {{'c' (conv): lhs and rhs storage types differ: u8 and i8 [C31]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "!quant.uniform<i8:f32, 0.5>"} : (tensor<1x2x4x4x!quant.uniform<u8:f32, 0.5>>, tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>
    func.return %c : tensor<1x3x2x2x!quant.uniform<i8:f32, 0.5>>
  }
}

// -----

module @conv_expressed_types_agree {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f16, 0.5>> {
    // expected-error@+1 {{'c' (conv): expressed types differ: lhs f32, rhs f32, result f16 [C32]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "!quant.uniform<i8:f16, 0.5>"} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f16, 0.5>>
    func.return %c : tensor<1x3x2x2x!quant.uniform<i8:f16, 0.5>>
  }
}

// -----

module @conv_per_tensor_rhs_per_tensor_result {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32:1, {0.5, 0.5, 0.5}>> {
    // expected-error@+1 {{'c' (conv): a per-tensor rhs gives a per-tensor result, not a per-axis one [C33]}}
    %c = "convc.conv"(%x, %w) {preferred_element_type = "!quant.uniform<i8:f32:1, {0.5, 0.5, 0.5}>"} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2x!quant.uniform<i8:f32:1, {0.5, 0.5, 0.5}>>
    func.return %c : tensor<1x3x2x2x!quant.uniform<i8:f32:1, {0.5, 0.5, 0.5}>>
  }
}

// -----

module @conv_hybrid_types_agree {
  func.func @main(%x: tensor<1x2x4x4xf16>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2xf16> {
    // expected-error@+1 {{'c' (conv): a float lhs (f16), the rhs's expressed type (f32) and the result (f16) must agree [C34]}}
    %c = "convc.conv"(%x, %w) : (tensor<1x2x4x4xf16>, tensor<3x2x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x3x2x2xf16>
    func.return %c : tensor<1x3x2x2xf16>
  }
}

// -----

module @round_needs_float {
  func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (round_nearest_even): round_nearest_even needs a floating element type, got i32 [round_nearest_even.C1]}}
    %r = "convc.round_nearest_even"(%x) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

module @reshape_splits_the_quantization_dimension {
  func.func @main(%x: tensor<2x4x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.5, 0.25}>>) -> tensor<2x2x2xi8> {
    // expected-error@+1 {{'r' (reshape): a reshape of a per-axis quantized tensor must keep its quantization dimension whole, with the same number of elements before it: tensor<2x4x!quant.uniform<i8:f32:1, {5.000000e-01,2.500000e-01,5.000000e-01,2.500000e-01}>> to [2, 2, 2] [reshape.C3]}}
    %r = "convc.reshape"(%x) {new_sizes = array<i64: 2, 2, 2>} : (tensor<2x4x!quant.uniform<i8:f32:1, {0.5, 0.25, 0.5, 0.25}>>) -> tensor<2x2x2xi8>
    func.return %r : tensor<2x2x2xi8>
  }
}

// -----

module @reverse_per_axis {
  func.func @main(%x: tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>> {
    // expected-error@+1 {{'r' (reverse): reverse takes a tensor or a per-tensor quantized tensor, got tensor<2x3x!quant.uniform<i8:f32:0, {5.000000e-01,2.500000e-01}>> [reverse.I1]}}
    %r = "convc.reverse"(%x) {dimensions = array<i64: 1>} : (tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>>) -> tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
    func.return %r : tensor<2x3x!quant.uniform<i8:f32:0, {0.5, 0.25}>>
  }
}

// -----

module @bitcast_keeps_the_width {
  func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4xi32> {
    // expected-error@+1 {{'b' (bitcast_convert): bitcast_convert keeps the element width: !quant.uniform<i8:f32, 5.000000e-01> has 8 bits, i32 32 (a quantized type counts its storage's) [bitcast_convert.C1]}}
    %b = "convc.bitcast_convert"(%x) {new_dtype = i32} : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4xi32>
    func.return %b : tensor<4xi32>
  }
}
