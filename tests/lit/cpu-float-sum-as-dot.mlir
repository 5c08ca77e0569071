// RUN: convc-opt %s -p cpu-float-sum-as-dot --split-input-file | filecheck %s

// A float reduce_sum over the middle dims of its operand (a pool's spatial sums,
// channels-last) becomes a dot_general of ones with it: the kept dims before the first summed
// one are batch dims, the ones [N, H, W], the result [N, C] as the reduce's.

// CHECK-LABEL: module @global_pool
// CHECK: %[[ONES:.*]] = "convc.constant"() {value = dense<1.0> : tensor<2x4x4xf32>}
// CHECK-NEXT: %s = "convc.dot_general"(%[[ONES]], %x)
// CHECK-SAME: lhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 1, 2>
// CHECK-SAME: precision = "HIGHEST", rhs_batching_dimensions = array<i64: 0>, rhs_contracting_dimensions = array<i64: 1, 2>
// CHECK-SAME: (tensor<2x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x8xf32>
// CHECK-NOT: convc.reduce_sum
// CHECK: func.return %s
module @global_pool {
  func.func @main(%x: tensor<2x4x4x8xf32>) -> tensor<2x8xf32> {
    %s = "convc.reduce_sum"(%x) {axes = array<i64: 1, 2>} : (tensor<2x4x4x8xf32>) -> tensor<2x8xf32>
    func.return %s : tensor<2x8xf32>
  }
}

// -----

// f64, two kept dims before the summed one and two after: batch dims [0, 1], the rest free.
// CHECK-LABEL: module @f64_rank5
// CHECK: %[[ONES:.*]] = "convc.constant"() {value = dense<1.0> : tensor<2x3x5xf64>}
// CHECK-NEXT: %s = "convc.dot_general"(%[[ONES]], %x)
// CHECK-SAME: lhs_batching_dimensions = array<i64: 0, 1>, lhs_contracting_dimensions = array<i64: 2>
// CHECK-SAME: rhs_batching_dimensions = array<i64: 0, 1>, rhs_contracting_dimensions = array<i64: 2>
// CHECK-SAME: -> tensor<2x3x4x6xf64>
module @f64_rank5 {
  func.func @main(%x: tensor<2x3x5x4x6xf64>) -> tensor<2x3x4x6xf64> {
    %s = "convc.reduce_sum"(%x) {axes = array<i64: 2>} : (tensor<2x3x5x4x6xf64>) -> tensor<2x3x4x6xf64>
    func.return %s : tensor<2x3x4x6xf64>
  }
}

// -----

// Left alone: a sum over the batch too (a gradient's bias sum, %over_batch), over the last dim
// (%over_features: the ones would be as large as the operand), an f16 sum (%half), and an
// integer sum (%ints: cpu-integer-sum-as-dot's, where f32 holds it exactly).
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.dot_general
module @untouched {
  func.func @main(%x: tensor<2x4x4x8xf32>, %h: tensor<2x4x4x8xf16>, %i: tensor<2x4x4x8xi32>) -> (tensor<8xf32>, tensor<2x4x4xf32>, tensor<2x8xf16>, tensor<2x8xi32>) {
    %over_batch = "convc.reduce_sum"(%x) {axes = array<i64: 0, 1, 2>} : (tensor<2x4x4x8xf32>) -> tensor<8xf32>
    %over_features = "convc.reduce_sum"(%x) {axes = array<i64: 3>} : (tensor<2x4x4x8xf32>) -> tensor<2x4x4xf32>
    %half = "convc.reduce_sum"(%h) {axes = array<i64: 1, 2>} : (tensor<2x4x4x8xf16>) -> tensor<2x8xf16>
    %ints = "convc.reduce_sum"(%i) {axes = array<i64: 1, 2>} : (tensor<2x4x4x8xi32>) -> tensor<2x8xi32>
    func.return %over_batch, %over_features, %half, %ints : tensor<8xf32>, tensor<2x4x4xf32>, tensor<2x8xf16>, tensor<2x8xi32>
  }
}
