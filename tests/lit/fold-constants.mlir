// RUN: convc-opt %s --split-input-file -p fold-constants,dce | filecheck %s
// RUN: convc-opt %s --split-input-file -p "fold-constants{max_elements=4},dce" | filecheck %s --check-prefix=SMALL

// fold-constants computes every op whose operands are all constants (through chains of
// them) with the jax.lax oracle and puts a constant of the result in its place, named as
// the op was; dce then drops what the folded ops read.

// A transposed conv's reversed kernel, as lower-conv-transpose leaves it, becomes the
// reversed constant; the conv reads it.
// CHECK-LABEL: module @reversed_kernel
// CHECK: %[[W:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[\[}}4.0, 3.0]]], {{\[\[\[}}2.0, 1.0]]]]> : tensor<2x1x1x2xf32>}
// CHECK-NOT: "convc.reverse"
// CHECK: "convc.conv"(%x, %[[W]])
// CHECK-SAME: -> tensor<1x3x1x2xf32>
module @reversed_kernel {
  func.func @main(%x: tensor<1x2x1x1xf32>) -> tensor<1x3x1x2xf32> {
    %w = "convc.constant"() {value = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
    %r = "convc.reverse"(%w) {dimensions = array<i64: 0, 3>} : (tensor<2x1x1x2xf32>) -> tensor<2x1x1x2xf32>
    %y = "convc.conv"(%x, %r) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x2x1x1xf32>, tensor<2x1x1x2xf32>) -> tensor<1x3x1x2xf32>
    func.return %y : tensor<1x3x1x2xf32>
  }
}

// -----

// A chain (transpose, reshape, multiply by a broadcast scalar) folds to one constant: only
// the last op's result is read by an op that is not folded, so only it is written. The
// broadcast grows its operand and would not be written as a constant of its own.
// CHECK-LABEL: module @chain
// CHECK: %[[C:[^ ]+]] = "convc.constant"() {value = dense<[2.0, 6.0, 4.0, 8.0]> : tensor<4xf32>}
// CHECK-NEXT: %[[S:[^ ]+]] = "convc.add"(%x, %[[C]])
// CHECK-NEXT: func.return %[[S]]
module @chain {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %k = "convc.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
    %t = "convc.transpose"(%k) {permutation = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %r = "convc.reshape"(%t) {new_sizes = array<i64: 4>} : (tensor<2x2xf32>) -> tensor<4xf32>
    %two = "convc.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %b = "convc.broadcast_in_dim"(%two) {broadcast_dimensions = array<i64>, shape = array<i64: 4>} : (tensor<f32>) -> tensor<4xf32>
    %m = "convc.multiply"(%r, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = "convc.add"(%x, %m) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}

// -----

// A broadcast that grows a constant is left to its user (XLA fuses it there for free).
// CHECK-LABEL: module @growing_broadcast
// CHECK: %[[K:[^ ]+]] = "convc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>}
// CHECK-NEXT: %[[B:[^ ]+]] = "convc.broadcast_in_dim"(%[[K]])
// CHECK-NEXT: "convc.multiply"(%x, %[[B]])
module @growing_broadcast {
  func.func @main(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %k = "convc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %b = "convc.broadcast_in_dim"(%k) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 2, 3, 3>} : (tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %m = "convc.multiply"(%x, %b) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %m : tensor<1x2x3x3xf32>
  }
}

// -----

// An op reading a non-constant stays, and so do constants only it reads; a graph output
// that is computed from constants alone becomes a constant (integer ones too).
// CHECK-LABEL: module @partly_constant
// CHECK: %[[K:[^ ]+]] = "convc.constant"() {value = dense<[1, 2, 3]> : tensor<3xi32>}
// CHECK: %[[P:[^ ]+]] = "convc.multiply"(%x, %[[K]])
// CHECK: %[[N:[^ ]+]] = "convc.constant"() {value = dense<[2, 4, 6]> : tensor<3xi32>}
// CHECK: func.return %[[P]], %[[N]]
module @partly_constant {
  func.func @main(%x: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>) {
    %k = "convc.constant"() {value = dense<[1, 2, 3]> : tensor<3xi32>} : () -> tensor<3xi32>
    %p = "convc.multiply"(%x, %k) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %n = "convc.add"(%k, %k) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    func.return %p, %n : tensor<3xi32>, tensor<3xi32>
  }
}

// -----

// max_elements bounds what a fold may grow into: padding 2 elements to 6 is folded by
// default; with max_elements=4 it is left alone (6 > 4 and 6 > 2), while a reverse (no
// growth) is folded whatever the limit.
// CHECK-LABEL: module @size_limit
// CHECK: "convc.constant"() {value = dense<[0.0, 0.0, 2.0, 1.0, 0.0, 0.0]> : tensor<6xf32>}
// CHECK-NOT: "convc.pad"
// SMALL-LABEL: module @size_limit
// SMALL: %[[R:[^ ]+]] = "convc.constant"() {value = dense<[2.0, 1.0]> : tensor<2xf32>}
// SMALL: "convc.pad"(%[[R]]
module @size_limit {
  func.func @main(%x: tensor<6xf32>) -> tensor<6xf32> {
    %k = "convc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %r = "convc.reverse"(%k) {dimensions = array<i64: 0>} : (tensor<2xf32>) -> tensor<2xf32>
    %p = "convc.pad"(%r) {padding_config = dense<[[2, 2, 0]]> : tensor<1x3xi64>} : (tensor<2xf32>) -> tensor<6xf32>
    %s = "convc.add"(%x, %p) : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    func.return %s : tensor<6xf32>
  }
}
