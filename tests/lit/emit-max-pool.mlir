// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// max_pool's emitter rule: one stablehlo.reduce_window with a max body, from the type's
// lowest value (-inf for floats, the smallest integer for integers); padding modes are
// resolved as lax.reduce_window resolves them, and every window attribute is written.

// SAME on a 2-D NHWC pool: 5 -> 3 with a 3x3 window at stride 2 pads [1, 1].
// CHECK-LABEL: module @same_nhwc
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<1x5x5x2xf32> loc("x"))
// CHECK-NEXT: %[[LOW:[^ ]+]] = stablehlo.constant dense<"0x000080FF"> : tensor<f32> loc("p")
// CHECK-NEXT: %[[P:[^ ]+]] = "stablehlo.reduce_window"(%[[X]], %[[LOW]]) ({
// CHECK-NEXT: ^bb0(%[[ACC:[^:]+]]: tensor<f32>, %[[VAL:[^:]+]]: tensor<f32>):
// CHECK-NEXT: %[[MAX:[^ ]+]] = stablehlo.maximum %[[ACC]], %[[VAL]] : tensor<f32>
// CHECK-NEXT: stablehlo.return %[[MAX]] : tensor<f32>
// CHECK-NEXT: }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>,
// CHECK-SAME: base_dilations = array<i64: 1, 1, 1, 1>, window_dilations = array<i64: 1, 1, 1, 1>,
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>}
// CHECK-SAME: : (tensor<1x5x5x2xf32>, tensor<f32>) -> tensor<1x3x3x2xf32> loc("p")
// CHECK-NEXT: return %[[P]] : tensor<1x3x3x2xf32>
module @same_nhwc {
  func.func @main(%x: tensor<1x5x5x2xf32>) -> tensor<1x3x3x2xf32> {
    %p = "convc.max_pool"(%x) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = "SAME"} : (tensor<1x5x5x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %p : tensor<1x3x3x2xf32>
  }
}

// -----

// Explicit pads, base and window dilation on an i32 input: the lowest i32 starts the max.
// Dimension 1: 4 dilated by 2 is 7, padded [1, 0] is 8; a 2-window dilated by 2 spans 3: 6 windows.
// CHECK-LABEL: module @explicit_dilated_i32
// CHECK: %[[LOW:[^ ]+]] = stablehlo.constant dense<-2147483648> : tensor<i32> loc("p")
// CHECK-NEXT: %[[P:[^ ]+]] = "stablehlo.reduce_window"(%{{[^,]+}}, %[[LOW]]) ({
// CHECK: }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 1>,
// CHECK-SAME: base_dilations = array<i64: 1, 2>, window_dilations = array<i64: 1, 2>,
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [1, 0]]> : tensor<2x2xi64>}
// CHECK-SAME: : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x6xi32> loc("p")
module @explicit_dilated_i32 {
  func.func @main(%x: tensor<3x4xi32>) -> tensor<3x6xi32> {
    %p = "convc.max_pool"(%x) {window_dimensions = array<i64: 1, 2>, padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>, base_dilation = array<i64: 1, 2>, window_dilation = array<i64: 1, 2>} : (tensor<3x4xi32>) -> tensor<3x6xi32>
    func.return %p : tensor<3x6xi32>
  }
}
