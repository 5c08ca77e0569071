// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// reduce_min's emitter rule: one stablehlo.reduce with a minimum body from +inf (the largest
// integer for integers); reduce_prod's: one with a multiply body from 1.

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
