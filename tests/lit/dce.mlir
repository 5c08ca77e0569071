// RUN: convc-opt %s -p dce --split-input-file | filecheck %s

// dce drops every op whose result nothing uses; the function's results count as uses.
// Graph inputs are never removed, even when unused (they are the function's signature).

// An unused conv next to a used relu: the conv goes, the relu stays.
// CHECK-LABEL: module @unused_op
// CHECK: func.func @main(%[[X:[^:]+]]: tensor<1x4x8x8xf32>, %{{[^:]+}}: tensor<8x4x3x3xf32>)
// CHECK-NOT: "convc.conv"
// CHECK: %[[R:[^ ]+]] = "convc.relu"(%[[X]])
// CHECK-NEXT: func.return %[[R]]
module @unused_op {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
    %dead = "convc.conv"(%x, %w) : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
    %r = "convc.relu"(%x) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    func.return %r : tensor<1x4x8x8xf32>
  }
}

// -----

// A dead chain: the constant only feeds a dead add, which only feeds a dead relu; all three go.
// CHECK-LABEL: module @dead_chain
// CHECK-NOT: "convc.constant"
// CHECK-NOT: "convc.add"
// CHECK-NOT: "convc.relu"
// CHECK: %[[M:[^ ]+]] = "convc.multiply"
// CHECK-NEXT: func.return %[[M]]
module @dead_chain {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %k = "convc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %a = "convc.add"(%x, %k) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = "convc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %m = "convc.multiply"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %m : tensor<4xf32>
  }
}

// -----

// Everything is live: the IR comes back unchanged, in order.
// CHECK-LABEL: module @all_live
// CHECK: %[[K:[^ ]+]] = "convc.constant"
// CHECK-NEXT: %[[A:[^ ]+]] = "convc.add"(%{{[^,]+}}, %[[K]])
// CHECK-NEXT: %[[R:[^ ]+]] = "convc.relu"(%[[A]])
// CHECK-NEXT: func.return %[[R]]
module @all_live {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %k = "convc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %a = "convc.add"(%x, %k) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = "convc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// Several results: each result keeps its producers alive; only the op used by none goes.
// CHECK-LABEL: module @multiple_results
// CHECK: %[[R:[^ ]+]] = "convc.relu"
// CHECK-NEXT: %[[T:[^ ]+]] = "convc.transpose"
// CHECK-NOT: "convc.reverse"
// CHECK-NEXT: func.return %[[T]], %[[R]] : tensor<3x2xf32>, tensor<2x3xf32>
module @multiple_results {
  func.func @main(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
    %r = "convc.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %t = "convc.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %v = "convc.reverse"(%x) {dimensions = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %t, %r : tensor<3x2xf32>, tensor<2x3xf32>
  }
}

// -----

// A value used twice by a live op and once by a dead op stays; the dead op goes.
// CHECK-LABEL: module @shared_operand
// CHECK: %[[R:[^ ]+]] = "convc.relu"
// CHECK-NOT: "convc.add"
// CHECK: %[[M:[^ ]+]] = "convc.multiply"(%[[R]], %[[R]])
// CHECK-NEXT: func.return %[[M]]
module @shared_operand {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %a = "convc.add"(%r, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %m = "convc.multiply"(%r, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %m : tensor<4xf32>
  }
}

// -----

// The function just returns an input: every op is dead, the unused input stays.
// CHECK-LABEL: module @only_inputs
// CHECK: func.func @main(%[[X:[^:]+]]: tensor<4xf32>, %{{[^:]+}}: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: func.return %[[X]] : tensor<4xf32>
module @only_inputs {
  func.func @main(%x: tensor<4xf32>, %unused: tensor<4xf32>) -> tensor<4xf32> {
    %a = "convc.add"(%x, %unused) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %x : tensor<4xf32>
  }
}
