// RUN: convc-opt %s -p cpu-materialize-shared-relu --split-input-file | filecheck %s

// A float relu read by more than one op, one of them not a conv or a dot, becomes
// maximum(x, clamp(x, 0, 0)): the same values, with two full-size operands, which XLA:CPU
// computes once instead of copying the relu (and the add before it) into each reader's fusion.

// A residual block's output, read by the next block's 1x1 conv (a dot of its rows) and by its
// residual add: the relu's name now names the maximum, its readers unchanged.
// CHECK-LABEL: module @residual_block_output
// CHECK: %[[SUM:.*]] = "convc.add"(%c, %r)
// CHECK-NEXT: %[[ZEROS:.*]] = "convc.clamp"(%[[SUM]]) {max = 0.0 : f64, min = 0.0 : f64}
// CHECK-SAME: (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %y = "convc.maximum"(%[[SUM]], %[[ZEROS]])
// CHECK-NOT: convc.relu
// CHECK: "convc.dot_general"(%y, %w)
// CHECK: "convc.add"(%{{.*}}, %y)
module @residual_block_output {
  func.func @main(%c: tensor<4x8xf32>, %r: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
    %s = "convc.add"(%c, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %y = "convc.relu"(%s) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %d = "convc.dot_general"(%y, %w) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %z = "convc.add"(%d, %y) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %z : tensor<4x8xf32>
  }
}

// -----

// Returned and read by one op: the return is a reader too.
// CHECK-LABEL: module @returned_and_read
// CHECK: "convc.clamp"(%x)
// CHECK-NEXT: %y = "convc.maximum"(%x,
// CHECK: func.return %y, %z
module @returned_and_read {
  func.func @main(%x: tensor<3xf16>) -> (tensor<3xf16>, tensor<3xf16>) {
    %y = "convc.relu"(%x) : (tensor<3xf16>) -> tensor<3xf16>
    %z = "convc.multiply"(%y, %y) : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
    func.return %y, %z : tensor<3xf16>, tensor<3xf16>
  }
}

// -----

// Left alone: a relu with one reader (used twice by it); a relu read only by a dot and the
// return, which XLA computes once anyway; and an integer relu read by two ops (clamp is a
// float op).
// CHECK-LABEL: module @untouched
// CHECK: %y = "convc.relu"(%x)
// CHECK: %v = "convc.relu"(%x)
// CHECK: %i = "convc.relu"(%n)
// CHECK-NOT: convc.clamp
module @untouched {
  func.func @main(%x: tensor<3xf32>, %w: tensor<3x2xf32>, %n: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xi32>, tensor<3xi32>) {
    %y = "convc.relu"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %z = "convc.multiply"(%y, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %v = "convc.relu"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %d = "convc.dot_general"(%v, %w) {lhs_contracting_dimensions = array<i64: 0>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
    %i = "convc.relu"(%n) : (tensor<3xi32>) -> tensor<3xi32>
    %j = "convc.add"(%i, %n) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %k = "convc.multiply"(%i, %n) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    func.return %z, %v, %d, %j, %k : tensor<3xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xi32>, tensor<3xi32>
  }
}
