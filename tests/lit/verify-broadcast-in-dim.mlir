// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per broadcast_in_dim diagnostic (compiler/ops/broadcast.py), named after
// the StableHLO broadcast_in_dim constraint (or MLIR type rule, M1) it breaks.
// STATUS-NOT: Traceback
// STATUS-COUNT-5: {{^}}{{.*}}verify-broadcast-in-dim.mlir:{{[0-9]+}}:5: error: 'r' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 5{{$}}

// broadcast_in_dim.M1: the shape is non-negative.
module @m1_shape_negative {
  func.func @main(%x: tensor<3xf32>) -> tensor<3x3xf32> {
    // expected-error@+1 {{'r' (broadcast_in_dim): shape must be non-negative, got [3, -1] [broadcast_in_dim.M1]}}
    %r = "convc.broadcast_in_dim"(%x) {shape = array<i64: 3, -1>, broadcast_dimensions = array<i64: 0>} : (tensor<3xf32>) -> tensor<3x3xf32>
    func.return %r : tensor<3x3xf32>
  }
}

// -----

// broadcast_in_dim.C2: one broadcast dimension per operand dimension.
module @c2_dimension_count {
  func.func @main(%x: tensor<3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (broadcast_in_dim): broadcast_dimensions has 2 entries, expected 1 (the operand's rank) [broadcast_in_dim.C2]}}
    %r = "convc.broadcast_in_dim"(%x) {shape = array<i64: 2, 3>, broadcast_dimensions = array<i64: 0, 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// broadcast_in_dim.C3: broadcast dimensions are dimensions of the result.
module @c3_dimension_range {
  func.func @main(%x: tensor<3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (broadcast_in_dim): broadcast_dimensions has dimension 2 out of range for rank 2 [broadcast_in_dim.C3]}}
    %r = "convc.broadcast_in_dim"(%x) {shape = array<i64: 2, 3>, broadcast_dimensions = array<i64: 2>} : (tensor<3xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// broadcast_in_dim.C4: broadcast dimensions are distinct.
module @c4_dimension_repeated {
  func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
    // expected-error@+1 {{'r' (broadcast_in_dim): broadcast_dimensions [1, 1] repeats a dimension [broadcast_in_dim.C4]}}
    %r = "convc.broadcast_in_dim"(%x) {shape = array<i64: 3, 3>, broadcast_dimensions = array<i64: 1, 1>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    func.return %r : tensor<3x3xf32>
  }
}

// -----

// broadcast_in_dim.C5: each operand dimension is 1 or the result dimension's size.
module @c5_dimension_size {
  func.func @main(%x: tensor<3xf32>) -> tensor<2x4xf32> {
    // expected-error@+1 {{'r' (broadcast_in_dim): operand dimension 0 has size 3, which cannot broadcast to size 4 (result dimension 1) [broadcast_in_dim.C5]}}
    %r = "convc.broadcast_in_dim"(%x) {shape = array<i64: 2, 4>, broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x4xf32>
    func.return %r : tensor<2x4xf32>
  }
}
