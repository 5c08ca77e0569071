// RUN: convc-opt %s -p cpu-integer-sum-as-dot --split-input-file | filecheck %s

// An integer reduce_sum whose partial sums f32 holds exactly (the operand's producers bound
// every |x|, times the elements summed) becomes a dot_general of f32 ones with the operand
// converted to f32, converted back; the kept dims before the first summed one are batch dims.

// QLinearGlobalAveragePool's sum, NHWC: int8 values less a zero point (|x| <= 162) over 4x4
// positions: the ones are [N, H, W], batch [0] x [0], and the result [N, C] as the reduce's.
// CHECK-LABEL: module @channels_last_pool
// CHECK: %[[REAL:.*]] = "convc.convert"(%[[X:.*]]) {new_dtype = f32} : (tensor<2x4x4x8xi32>) -> tensor<2x4x4x8xf32>
// CHECK-NEXT: %[[ONES:.*]] = "convc.constant"() {value = dense<1.0> : tensor<2x4x4xf32>}
// CHECK-NEXT: %[[SUMS:.*]] = "convc.dot_general"(%[[ONES]], %[[REAL]])
// CHECK-SAME: lhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 1, 2>
// CHECK-SAME: precision = "HIGHEST", rhs_batching_dimensions = array<i64: 0>, rhs_contracting_dimensions = array<i64: 1, 2>
// CHECK-SAME: -> tensor<2x8xf32>
// CHECK-NEXT: %s = "convc.convert"(%[[SUMS]]) {new_dtype = i32} : (tensor<2x8xf32>) -> tensor<2x8xi32>
// CHECK-NOT: convc.reduce_sum
// CHECK: func.return %s
module @channels_last_pool {
  func.func @main(%q: tensor<2x4x4x8xi8>) -> tensor<2x8xi32> {
    %wide = "convc.convert"(%q) {new_dtype = i32} : (tensor<2x4x4x8xi8>) -> tensor<2x4x4x8xi32>
    %zp = "convc.constant"() {value = dense<-34> : tensor<i32>} : () -> tensor<i32>
    %zps = "convc.broadcast_in_dim"(%zp) {broadcast_dimensions = array<i64>, shape = array<i64: 2, 4, 4, 8>} : (tensor<i32>) -> tensor<2x4x4x8xi32>
    %x = "convc.subtract"(%wide, %zps) : (tensor<2x4x4x8xi32>, tensor<2x4x4x8xi32>) -> tensor<2x4x4x8xi32>
    %s = "convc.reduce_sum"(%x) {axes = array<i64: 1, 2>} : (tensor<2x4x4x8xi32>) -> tensor<2x8xi32>
    func.return %s : tensor<2x8xi32>
  }
}

// -----

// Summed dims first: no batch dims; the rhs's free dims are the result's.
// CHECK-LABEL: module @leading_axes
// CHECK: %[[ONES:.*]] = "convc.constant"() {value = dense<1.0> : tensor<3xf32>}
// CHECK: "convc.dot_general"(%[[ONES]], %{{.*}}) {lhs_batching_dimensions = array<i64>, lhs_contracting_dimensions = array<i64: 0>
// CHECK-SAME: rhs_batching_dimensions = array<i64>, rhs_contracting_dimensions = array<i64: 0>
// CHECK-SAME: -> tensor<5xf32>
module @leading_axes {
  func.func @main(%q: tensor<3x5xui8>) -> tensor<5xi32> {
    %x = "convc.convert"(%q) {new_dtype = i32} : (tensor<3x5xui8>) -> tensor<3x5xi32>
    %s = "convc.reduce_sum"(%x) {axes = array<i64: 0>} : (tensor<3x5xi32>) -> tensor<5xi32>
    func.return %s : tensor<5xi32>
  }
}

// -----

// Left alone: a float sum (a dot would sum in another order), an i32 graph input (no bound
// proven: its range is i32's), and 8-bit values over 2^17 elements (128 * 2^17 = 2^24).
// CHECK-LABEL: module @untouched
// CHECK-COUNT-3: "convc.reduce_sum"
// CHECK-NOT: convc.dot_general
module @untouched {
  func.func @main(%f: tensor<4x4xf32>, %i: tensor<4x4xi32>, %q: tensor<2x65536xi8>) -> (tensor<4xf32>, tensor<4xi32>, tensor<i32>) {
    %fs = "convc.reduce_sum"(%f) {axes = array<i64: 1>} : (tensor<4x4xf32>) -> tensor<4xf32>
    %is = "convc.reduce_sum"(%i) {axes = array<i64: 1>} : (tensor<4x4xi32>) -> tensor<4xi32>
    %wide = "convc.convert"(%q) {new_dtype = i32} : (tensor<2x65536xi8>) -> tensor<2x65536xi32>
    %qs = "convc.reduce_sum"(%wide) {axes = array<i64: 0, 1>} : (tensor<2x65536xi32>) -> tensor<i32>
    func.return %fs, %is, %qs : tensor<4xf32>, tensor<4xi32>, tensor<i32>
  }
}
