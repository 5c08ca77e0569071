// RUN: convc-opt %s --split-input-file | convc-opt - --split-input-file | filecheck %s
// RUN: convc-opt %s --split-input-file -o %t.once
// RUN: convc-opt %t.once --split-input-file -o %t.twice
// RUN: diff %t.once %t.twice

// Printing and reading convc text back loses nothing: the first RUN checks the text
// after two trips, the last three that a second trip changes nothing at all.

// Every conv attribute kind: layouts, ints, arrays, explicit rows, a precision pair, a dtype.
// CHECK-LABEL: module @conv_attributes
// CHECK: "convc.conv"(%[[X:[^,]+]], %[[W:[^)]+]])
// CHECK-SAME: {batch_group_count = 1 : i64, dimension_numbers = ["NHWC", "HWIO", "NHWC"], feature_group_count = 2 : i64,
// CHECK-SAME: lhs_dilation = array<i64: 1, 2>, padding = dense<{{\[\[}}1, -1], [0, 2]]> : tensor<2x2xi64>,
// CHECK-SAME: precision = ["HIGH", "DEFAULT"], preferred_element_type = f32, rhs_dilation = array<i64: 2, 1>,
// CHECK-SAME: window_strides = array<i64: 1, 3>}
// CHECK-SAME: : (tensor<1x5x5x4xf16>, tensor<2x2x2x6xf16>) -> tensor<1x3x4x6xf32>
module @conv_attributes {
  func.func @main(%x: tensor<1x5x5x4xf16>, %w: tensor<2x2x2x6xf16>) -> tensor<1x3x4x6xf32> {
    %c = "convc.conv"(%x, %w) {batch_group_count = 1 : i64, dimension_numbers = ["NHWC", "HWIO", "NHWC"], feature_group_count = 2 : i64, lhs_dilation = array<i64: 1, 2>, padding = dense<[[1, -1], [0, 2]]> : tensor<2x2xi64>, precision = ["HIGH", "DEFAULT"], preferred_element_type = f32, rhs_dilation = array<i64: 2, 1>, window_strides = array<i64: 1, 3>} : (tensor<1x5x5x4xf16>, tensor<2x2x2x6xf16>) -> tensor<1x3x4x6xf32>
    func.return %c : tensor<1x3x4x6xf32>
  }
}

// -----

// Explicit dimension numbers, a padding mode and a single precision.
// CHECK-LABEL: module @explicit_dimension_numbers
// CHECK: {dimension_numbers = #convc.dims<[f, 1, 0, b]x[i, o, 1, 0]->[b, 0, 1, f]>, padding = "SAME_LOWER", precision = "HIGHEST"}
module @explicit_dimension_numbers {
  func.func @main(%x: tensor<4x8x9x1xf32>, %w: tensor<4x6x3x2xf32>) -> tensor<1x9x8x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[f, 1, 0, b]x[i, o, 1, 0]->[b, 0, 1, f]>, padding = "SAME_LOWER", precision = "HIGHEST"} : (tensor<4x8x9x1xf32>, tensor<4x6x3x2xf32>) -> tensor<1x9x8x6xf32>
    func.return %c : tensor<1x9x8x6xf32>
  }
}

// -----

// Constants of every element type: inline values, splats, and above 16 elements a
// little-endian hex blob (read back bit for bit).
// CHECK-LABEL: module @constants
// CHECK: "convc.constant"() {value = dense<[1.5, -2.0, 0.0]> : tensor<3xf32>}
// CHECK: "convc.constant"() {value = dense<[[1, -2], [3, 127]]> : tensor<2x2xi8>}
// CHECK: "convc.constant"() {value = dense<-7> : tensor<2x3xi32>}
// CHECK: "convc.constant"() {value = dense<0.5> : tensor<4xbf16>}
// CHECK: "convc.constant"() {value = dense<[0.0999755859375, 1.0]> : tensor<2xf16>}
// CHECK: "convc.constant"() {value = dense<[0.1, 0.2]> : tensor<2xf64>}
// CHECK: "convc.constant"() {value = dense<"0x000000000000803F0000004000004040{{[0-9A-F]+}}"> : tensor<20xf32>}
module @constants {
  func.func @main() -> (tensor<3xf32>, tensor<2x2xi8>, tensor<2x3xi32>, tensor<4xbf16>, tensor<2xf16>, tensor<2xf64>, tensor<20xf32>) {
    %a = "convc.constant"() {value = dense<[1.5, -2.0, 0.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %b = "convc.constant"() {value = dense<[[1, -2], [3, 127]]> : tensor<2x2xi8>} : () -> tensor<2x2xi8>
    %c = "convc.constant"() {value = dense<-7> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
    %d = "convc.constant"() {value = dense<0.5> : tensor<4xbf16>} : () -> tensor<4xbf16>
    %e = "convc.constant"() {value = dense<[0.1, 1.0]> : tensor<2xf16>} : () -> tensor<2xf16>
    %f = "convc.constant"() {value = dense<[0.1, 0.2]> : tensor<2xf64>} : () -> tensor<2xf64>
    %g = "convc.constant"() {value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]> : tensor<20xf32>} : () -> tensor<20xf32>
    func.return %a, %b, %c, %d, %e, %f, %g : tensor<3xf32>, tensor<2x2xi8>, tensor<2x3xi32>, tensor<4xbf16>, tensor<2xf16>, tensor<2xf64>, tensor<20xf32>
  }
}

// -----

// Plain-op attributes: integer rows, a float, a non-finite float (quoted: no MLIR
// decimal literal spells it), a dtype and an integer.
// CHECK-LABEL: module @plain_op_attributes
// CHECK: "convc.pad"(%{{[^)]+}}) {padding_config = dense<{{\[\[}}1, -1, 1], [0, 2, 0]]> : tensor<2x3xi64>, padding_value = 2.5 : f64}
// CHECK: "convc.pad"(%{{[^)]+}}) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 1, 0]]> : tensor<2x3xi64>, padding_value = "-inf"}
// CHECK: "convc.convert"(%{{[^)]+}}) {new_dtype = i8}
// CHECK: "convc.bias_add"(%{{[^,]+}}, %{{[^)]+}}) {axis = 0 : i64}
module @plain_op_attributes {
  func.func @main(%x: tensor<6x4xf32>, %b: tensor<6xf32>) -> (tensor<11x6xf32>, tensor<6x6xf32>, tensor<6x4xi8>, tensor<6x4xf32>) {
    %p = "convc.pad"(%x) {padding_config = dense<[[1, -1, 1], [0, 2, 0]]> : tensor<2x3xi64>, padding_value = 2.5 : f64} : (tensor<6x4xf32>) -> tensor<11x6xf32>
    %q = "convc.pad"(%x) {padding_config = dense<[[0, 0, 0], [1, 1, 0]]> : tensor<2x3xi64>, padding_value = "-inf"} : (tensor<6x4xf32>) -> tensor<6x6xf32>
    %i = "convc.convert"(%x) {new_dtype = i8} : (tensor<6x4xf32>) -> tensor<6x4xi8>
    %y = "convc.bias_add"(%x, %b) {axis = 0 : i64} : (tensor<6x4xf32>, tensor<6xf32>) -> tensor<6x4xf32>
    func.return %p, %q, %i, %y : tensor<11x6xf32>, tensor<6x6xf32>, tensor<6x4xi8>, tensor<6x4xf32>
  }
}

// -----

// Names that are not MLIR SSA ids survive through loc("..."); the module name is quoted.
// CHECK-LABEL: module @"my model"
// CHECK: func.func @main(%[[IN:[^:]+]]: tensor<2xf32> loc("input:0"))
// CHECK-NEXT: %[[R:[^ ]+]] = "convc.relu"(%[[IN]]) : (tensor<2xf32>) -> tensor<2xf32> loc("block 1/relu")
// CHECK-NEXT: func.return %[[R]] : tensor<2xf32>
module @"my model" {
  func.func @main(%v: tensor<2xf32> loc("input:0")) -> tensor<2xf32> {
    %v_1 = "convc.relu"(%v) : (tensor<2xf32>) -> tensor<2xf32> loc("block 1/relu")
    func.return %v_1 : tensor<2xf32>
  }
}

// -----

// A function without a module wrapper reads as one, named after the function.
// CHECK-LABEL: module @bare
// CHECK-NEXT: func.func @main(
module {
  func.func @bare(%x: tensor<2xf32>) -> tensor<2xf32> {
    func.return %x : tensor<2xf32>
  }
}
