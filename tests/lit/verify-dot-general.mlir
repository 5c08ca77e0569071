// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per dot_general diagnostic (compiler/ops/dot.py), named after the
// StableHLO dot_general constraint it breaks (docs/diagnostics.md). C12 (the result
// shape) is inferred: a written one that differs is A5 (verify-ir.mlir).
// STATUS-NOT: Traceback
// STATUS-COUNT-13: {{^}}{{.*}}verify-dot-general.mlir:{{[0-9]+}}:5: error: 'r' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 13{{$}}

// dot_general.C1: as many lhs as rhs batching dimensions.
module @c1_batching_count {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): lhs has 1 batching dimensions but rhs has 0 [dot_general.C1]}}
    %r = "convc.dot_general"(%a, %b) {lhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}

// -----

// dot_general.C2: as many lhs as rhs contracting dimensions.
module @c2_contracting_count {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): lhs has 1 contracting dimensions but rhs has 2 [dot_general.C2]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0, 1>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}

// -----

// dot_general.C3: lhs batching and contracting dimensions are distinct.
module @c3_lhs_unique {
  func.func @main(%a: tensor<3x3xf32>, %b: tensor<3x3xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{'r' (dot_general): lhs batching and contracting dimensions [0, 0] repeat a dimension [dot_general.C3]}}
    %r = "convc.dot_general"(%a, %b) {lhs_batching_dimensions = array<i64: 0>, rhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 0>, rhs_contracting_dimensions = array<i64: 1>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3xf32>
    func.return %r : tensor<3xf32>
  }
}

// -----

// dot_general.C4: rhs batching and contracting dimensions are distinct.
module @c4_rhs_unique {
  func.func @main(%a: tensor<3x3xf32>, %b: tensor<3x3xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{'r' (dot_general): rhs batching and contracting dimensions [1, 1] repeat a dimension [dot_general.C4]}}
    %r = "convc.dot_general"(%a, %b) {lhs_batching_dimensions = array<i64: 0>, rhs_batching_dimensions = array<i64: 1>, lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 1>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3xf32>
    func.return %r : tensor<3xf32>
  }
}

// -----

// dot_general.C5: lhs batching dimensions are dimensions of lhs.
module @c5_lhs_batching_range {
  func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
    // expected-error@+1 {{'r' (dot_general): lhs_batching_dimensions has dimension 3 out of range for rank 3 [dot_general.C5]}}
    %r = "convc.dot_general"(%a, %b) {lhs_batching_dimensions = array<i64: 3>, rhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 2>, rhs_contracting_dimensions = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    func.return %r : tensor<2x3x5xf32>
  }
}

// -----

// dot_general.C6: lhs contracting dimensions are dimensions of lhs.
module @c6_lhs_contracting_range {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): lhs_contracting_dimensions has dimension 2 out of range for rank 2 [dot_general.C6]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 2>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}

// -----

// dot_general.C7: rhs batching dimensions are dimensions of rhs.
module @c7_rhs_batching_range {
  func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
    // expected-error@+1 {{'r' (dot_general): rhs_batching_dimensions has dimension 3 out of range for rank 3 [dot_general.C7]}}
    %r = "convc.dot_general"(%a, %b) {lhs_batching_dimensions = array<i64: 0>, rhs_batching_dimensions = array<i64: 3>, lhs_contracting_dimensions = array<i64: 2>, rhs_contracting_dimensions = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    func.return %r : tensor<2x3x5xf32>
  }
}

// -----

// dot_general.C8: rhs contracting dimensions are dimensions of rhs.
module @c8_rhs_contracting_range {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): rhs_contracting_dimensions has dimension 2 out of range for rank 2 [dot_general.C8]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 2>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}

// -----

// dot_general.C9: paired batching dimensions have one size.
module @c9_batching_sizes {
  func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) -> tensor<2x3x5xf32> {
    // expected-error@+1 {{'r' (dot_general): batching dimension sizes differ: lhs dimension 0 has size 2, rhs dimension 0 has size 3 [dot_general.C9]}}
    %r = "convc.dot_general"(%a, %b) {lhs_batching_dimensions = array<i64: 0>, rhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 2>, rhs_contracting_dimensions = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
    func.return %r : tensor<2x3x5xf32>
  }
}

// -----

// dot_general.C10: paired contracting dimensions have one size.
module @c10_contracting_sizes {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
    // expected-error@+1 {{'r' (dot_general): contracting dimension sizes differ: lhs dimension 1 has size 3, rhs dimension 0 has size 4 [dot_general.C10]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
    func.return %r : tensor<2x5xf32>
  }
}

// -----

// dot_general.C11: precision is one precision or a pair (lhs, rhs).
module @c11_precision_pair {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): precision must be a precision or a pair of them, got ['HIGH', 'HIGH', 'HIGH'] [dot_general.C11]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>, precision = ["HIGH", "HIGH", "HIGH"]} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}

// -----

// dot_general.C11: each precision is DEFAULT, HIGH or HIGHEST.
module @c11_precision_value {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): precision must be one of DEFAULT, HIGH, HIGHEST or a pair of them, got 'LOW' [dot_general.C11]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>, precision = "LOW"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}

// -----

// dot_general.C13: lhs and rhs have one element type.
module @c13_element_types {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (dot_general): element types differ: f32 and f16 [dot_general.C13]}}
    %r = "convc.dot_general"(%a, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}
