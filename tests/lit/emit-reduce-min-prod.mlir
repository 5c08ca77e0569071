// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// reduce_min's emitter rule: one stablehlo.reduce with a minimum body from +inf (the largest
// integer for integers); reduce_prod's: one with a multiply body from 1; reduce_prod_grad's:
// the product of the others without a division by zero.

// CHECK-LABEL: module @reduce_min_f32
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<2x3x4xf32> loc("x"))
// CHECK-NEXT: %[[INIT:[^ ]+]] = stablehlo.constant dense<"0x0000807F"> : tensor<f32>
// CHECK-NEXT: %[[M:[^ ]+]] = stablehlo.reduce(%[[X]] init: %[[INIT]]) applies stablehlo.minimum across dimensions = [0, 2]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[M]] : tensor<3xf32>
module @reduce_min_f32 {
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
    %m = "convc.reduce_min"(%x) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
    func.return %m : tensor<3xf32>
  }
}

// -----

// CHECK-LABEL: module @reduce_min_i32
// CHECK: %[[INIT:[^ ]+]] = stablehlo.constant dense<2147483647> : tensor<i32>
// CHECK-NEXT: stablehlo.reduce(%{{[^ ]+}} init: %[[INIT]]) applies stablehlo.minimum across dimensions = [1]
module @reduce_min_i32 {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<2xi32> {
    %m = "convc.reduce_min"(%x) {axes = array<i64: 1>} : (tensor<2x3xi32>) -> tensor<2xi32>
    func.return %m : tensor<2xi32>
  }
}

// -----

// CHECK-LABEL: module @reduce_prod_f32_and_i32
// CHECK: %[[ONE:[^ ]+]] = stablehlo.constant dense<1.0> : tensor<f32>
// CHECK-NEXT: %[[P:[^ ]+]] = stablehlo.reduce(%{{[^ ]+}} init: %[[ONE]]) applies stablehlo.multiply across dimensions = [1]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[IONE:[^ ]+]] = stablehlo.constant dense<1> : tensor<i32>
// CHECK-NEXT: %[[Q:[^ ]+]] = stablehlo.reduce(%{{[^ ]+}} init: %[[IONE]]) applies stablehlo.multiply across dimensions = [0]
// CHECK-NEXT: return %[[P]], %[[Q]]
module @reduce_prod_f32_and_i32 {
  func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi32>) -> (tensor<2x4xf32>, tensor<3xi32>) {
    %p = "convc.reduce_prod"(%x) {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
    %q = "convc.reduce_prod"(%i) {axes = array<i64: 0>} : (tensor<2x3xi32>) -> tensor<3xi32>
    func.return %p, %q : tensor<2x4xf32>, tensor<3xi32>
  }
}

// -----

// reduce_prod_grad over dims 0 and 2: zeros found by compare EQ, the product of the non-zero
// elements (zeros as 1s) and the count of zeros; p / x where x is non-zero, p where it is
// zero; kept only where no other element of the group is zero.
// CHECK-LABEL: module @reduce_prod_grad
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<2x3x4xf32> loc("x"), %[[G:[^:]+]]: tensor<3xf32> loc("g"))
// CHECK: %[[ZEROS:[^ ]+]] = stablehlo.broadcast_in_dim %{{[^ ]+}}, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
// CHECK: %[[ONES:[^ ]+]] = stablehlo.broadcast_in_dim %{{[^ ]+}}, dims = [] : (tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[ISZERO:[^ ]+]] = stablehlo.compare EQ, %[[X]], %[[ZEROS]], FLOAT
// CHECK-NEXT: %[[IND:[^ ]+]] = stablehlo.convert %[[ISZERO]] : (tensor<2x3x4xi1>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[NONZERO:[^ ]+]] = stablehlo.select %[[ISZERO]], %[[ONES]], %[[X]]
// CHECK-NEXT: %[[ONE:[^ ]+]] = stablehlo.constant dense<1.0> : tensor<f32>
// CHECK-NEXT: %[[P:[^ ]+]] = stablehlo.reduce(%[[NONZERO]] init: %[[ONE]]) applies stablehlo.multiply across dimensions = [0, 2]
// CHECK-NEXT: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32>
// CHECK-NEXT: %[[COUNT:[^ ]+]] = stablehlo.reduce(%[[IND]] init: %[[ZERO]]) applies stablehlo.add across dimensions = [0, 2]
// CHECK-NEXT: %[[PW:[^ ]+]] = stablehlo.broadcast_in_dim %[[P]], dims = [1]
// CHECK-NEXT: %[[CW:[^ ]+]] = stablehlo.broadcast_in_dim %[[COUNT]], dims = [1]
// CHECK-NEXT: %[[OTHERSZERO:[^ ]+]] = stablehlo.subtract %[[CW]], %[[IND]]
// CHECK-NEXT: %[[Q:[^ ]+]] = stablehlo.divide %[[PW]], %[[NONZERO]]
// CHECK-NEXT: %[[OTHERS:[^ ]+]] = stablehlo.select %[[ISZERO]], %[[PW]], %[[Q]]
// CHECK-NEXT: %[[GW:[^ ]+]] = stablehlo.broadcast_in_dim %[[G]], dims = [1]
// CHECK-NEXT: %[[SCALED:[^ ]+]] = stablehlo.multiply %[[GW]], %[[OTHERS]]
// CHECK-NEXT: %[[ALONE:[^ ]+]] = stablehlo.compare EQ, %[[OTHERSZERO]], %[[ZEROS]], FLOAT
// CHECK-NEXT: %[[D:[^ ]+]] = stablehlo.select %[[ALONE]], %[[SCALED]], %[[ZEROS]] : (tensor<2x3x4xi1>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("d")
// CHECK-NEXT: return %[[D]]
module @reduce_prod_grad {
  func.func @main(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) -> tensor<2x3x4xf32> {
    %d = "convc.reduce_prod_grad"(%x, %g) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
    func.return %d : tensor<2x3x4xf32>
  }
}
