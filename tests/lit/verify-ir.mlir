// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS
// RUN: %exit-status convc-opt %S/inputs/not-utf8.mlir | filecheck %s --check-prefix=NOT-UTF8
// RUN: %exit-status convc-opt %S/inputs/not-utf8.mlir --split-input-file | filecheck %s --check-prefix=NOT-UTF8

// One case per diagnostic of the convc text reader and the generic op checks (op
// names, operands, types, attribute syntax), each one line at the offending token.
// The whole file exits 1 with exactly those lines (--verify-diagnostics checks each
// message and line; the STATUS lines check each column, in the cases' order).
// Op-specific rules: verify-conv.mlir and verify-tensor-ops.mlir.
// STATUS-NOT: Traceback
// STATUS: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:10: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:10: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:23: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:5: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:38: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:5: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:10: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:5: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:5: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:23: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:62: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:8: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:34: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:38: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:52: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:38: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:3: error: {{.*}}
// STATUS-NEXT: {{^}}{{.*}}verify-ir.mlir:{{[0-9]+}}:1: error: {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 18{{$}}

// Input that is not UTF-8 (a Latin-1 byte in a comment), with or without --split-input-file.
// NOT-UTF8: {{^}}{{.*}}/inputs/not-utf8.mlir: error: input is not UTF-8 text (byte 26) [I2]{{$}}
// NOT-UTF8-NEXT: {{^}}exit status: 1, output lines: 1{{$}}

// An unknown op, with the closest known one suggested.
module @unknown_op {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{unknown op 'convc.conv2d' (did you mean 'conv'?) [A7]}}
    %r = "convc.conv2d"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// Ops live in the convc namespace; StableHLO ops are not convc IR.
module @op_outside_namespace {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{unknown op 'stablehlo.add' [A7]}}
    %r = "stablehlo.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// An operand must be defined before it is used.
module @undefined_value {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{use of undefined value '%y' [X4]}}
    %r = "convc.relu"(%y) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// An SSA name is defined once (here an op result reuses an argument's).
module @ssa_redefined {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'%x' is defined twice [X5]}}
    %x = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %x : tensor<4xf32>
  }
}

// -----

// Arguments have distinct names.
module @argument_redefined {
  // expected-error@+1 {{'%x' is defined twice [X5]}}
  func.func @main(%x: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

// Node names (an SSA id, or a loc("...") override) are unique.
module @node_name_redefined {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("n")
    // expected-error@+1 {{name 'n' is defined twice [X5]}}
    %b = "convc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32> loc("n")
    func.return %b : tensor<4xf32>
  }
}

// -----

// The op's declared operand types are its operands' types.
module @operand_types {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{operand types do not match the operands' declared types [X6]}}
    %r = "convc.relu"(%x) : (tensor<5xf32>) -> tensor<5xf32>
    func.return %r : tensor<5xf32>
  }
}

// -----

// The declared result type is the inferred one (a transpose of 2x3 is 3x2).
module @result_type {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'t' (transpose): result type tensor<2x3xf32> does not match the inferred type tensor<3x2xf32> [A5]}}
    %t = "convc.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %t : tensor<2x3xf32>
  }
}

// -----

// func.return's types are the function's result types.
module @return_types {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error@+1 {{return types do not match the function's result types [X7]}}
    func.return %r : tensor<4xf16>
  }
}

// -----

// Element types are convc's (f32, f16, bf16, f64, i8, i16, i32, i64, ui8, and !quant.uniform types).
module @unknown_element_type {
  // expected-error@+1 {{unknown element type 'f8' [X3]}}
  func.func @main(%x: tensor<4xf8>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

// A character no token starts with.
module @unexpected_character {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{unexpected character '?' [X1]}}
    %r = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> ?
    func.return %r : tensor<4xf32>
  }
}

// -----

// A missing token is named, with what was found instead.
module @expected_token {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{expected '=', found '"convc.relu"' [X2]}}
    %r "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// An attribute value convc cannot read.
module @unexpected_attribute_value {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{unexpected attribute value 'bar' [X8]}}
    %r = "convc.relu"(%x) {foo = bar} : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// A dense literal whose element count does not fit its type.
module @malformed_dense {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{malformed dense literal: cannot reshape array of size 2 into shape (4,) [X8]}}
    %k = "convc.constant"() {value = dense<[1.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    func.return %k : tensor<4xf32>
  }
}

// -----

// #convc.dims names each spatial dimension once (here 0 twice): C13 cannot be spelled.
module @malformed_dims {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
    // expected-error@+1 {{malformed dimension numbers '[b, f, 0, 0]x[o, i, 0, 1]->[b, f, 0, 1]': spatial labels must be 0..1, each once [X8]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 0]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    func.return %c : tensor<1x2x4x4xf32>
  }
}

// -----

// A constant printed elided has lost its value: it cannot be read back.
module @elided_constant {
  func.func @main() -> tensor<4xf32> {
    // expected-error@+1 {{this constant was elided when the IR was printed {{.*}} [X9]}}
    %k = "convc.constant"() {value = dense_resource<__elided__> : tensor<4xf32>} : () -> tensor<4xf32>
    func.return %k : tensor<4xf32>
  }
}

// -----

// Text after the module.
module @trailing_text {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
} // the next line is not IR
  // expected-error@+1 {{expected end of input, found 'trailing' [X2]}}
  trailing

// -----

// A module that is never closed: the error is at the end of the chunk.
module @unclosed {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }

// expected-error@+1 {{expected '}', found 'end of input' [X2]}}
