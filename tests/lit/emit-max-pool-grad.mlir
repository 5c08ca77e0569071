// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// max_pool_grad's emitter rule: one stablehlo.select_and_scatter of out_grad over x (checked
// by the MLIR verifier as convc-opt emits it), its select region a GE compare (the first
// maximum of a window wins), its scatter region an add, its initial value 0; a padding
// mode is resolved on x as max_pool resolves it.

// SAME on a 2-D NHWC pool: 5 -> 3 with a 3x3 window at stride 2 pads [1, 1].
// CHECK-LABEL: module @same_nhwc
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<1x5x5x2xf32> loc("x"), %[[G:[^:]+]]: tensor<1x3x3x2xf32> loc("g"))
// CHECK-NEXT: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32> loc("d")
// CHECK-NEXT: %[[D:[^ ]+]] = "stablehlo.select_and_scatter"(%[[X]], %[[G]], %[[ZERO]]) ({
// CHECK-NEXT: ^bb0(%[[LHS:[^:]+]]: tensor<f32>, %[[RHS:[^:]+]]: tensor<f32>):
// CHECK-NEXT: %[[GE:[^ ]+]] = stablehlo.compare GE, %[[LHS]], %[[RHS]], FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT: stablehlo.return %[[GE]] : tensor<i1>
// CHECK-NEXT: }, {
// CHECK-NEXT: ^bb0(%[[ACC:[^:]+]]: tensor<f32>, %[[VAL:[^:]+]]: tensor<f32>):
// CHECK-NEXT: %[[SUM:[^ ]+]] = stablehlo.add %[[ACC]], %[[VAL]] : tensor<f32>
// CHECK-NEXT: stablehlo.return %[[SUM]] : tensor<f32>
// CHECK-NEXT: }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>,
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>}
// CHECK-SAME: : (tensor<1x5x5x2xf32>, tensor<1x3x3x2xf32>, tensor<f32>) -> tensor<1x5x5x2xf32> loc("d")
// CHECK-NEXT: return %[[D]] : tensor<1x5x5x2xf32>
module @same_nhwc {
  func.func @main(%x: tensor<1x5x5x2xf32>, %g: tensor<1x3x3x2xf32>) -> tensor<1x5x5x2xf32> {
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = "SAME"} : (tensor<1x5x5x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x5x5x2xf32>
    func.return %d : tensor<1x5x5x2xf32>
  }
}

// -----

// Explicit pads that crop and pad an NCHW bf16 input, strides defaulted to 1 (written out):
// dimension 2 is 6 cropped 1 low, padded 2 high: 7, so a 2-window gives 6 windows.
// CHECK-LABEL: module @explicit_crop_nchw_bf16
// CHECK: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<bf16> loc("d")
// CHECK-NEXT: %[[D:[^ ]+]] = "stablehlo.select_and_scatter"(%{{[^,]+}}, %{{[^,]+}}, %[[ZERO]]) ({
// CHECK: stablehlo.compare GE, %{{[^,]+}}, %{{[^,]+}}, FLOAT : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
// CHECK: stablehlo.add %{{[^,]+}}, %{{[^ ]+}} : tensor<bf16>
// CHECK: }) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 1, 1>,
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0], [-1, 2], [0, 1]]> : tensor<4x2xi64>}
// CHECK-SAME: : (tensor<2x3x6x4xbf16>, tensor<2x3x6x4xbf16>, tensor<bf16>) -> tensor<2x3x6x4xbf16> loc("d")
module @explicit_crop_nchw_bf16 {
  func.func @main(%x: tensor<2x3x6x4xbf16>, %g: tensor<2x3x6x4xbf16>) -> tensor<2x3x6x4xbf16> {
    %d = "convc.max_pool_grad"(%x, %g) {window_dimensions = array<i64: 1, 1, 2, 2>, padding = dense<[[0, 0], [0, 0], [-1, 2], [0, 1]]> : tensor<4x2xi64>} : (tensor<2x3x6x4xbf16>, tensor<2x3x6x4xbf16>) -> tensor<2x3x6x4xbf16>
    func.return %d : tensor<2x3x6x4xbf16>
  }
}
