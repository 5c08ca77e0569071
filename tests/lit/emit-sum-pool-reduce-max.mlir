// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// sum_pool's emitter rule: one stablehlo.reduce_window with an add body from 0, every window
// attribute written (a padding mode resolved as lax resolves it); reduce_max's: a
// stablehlo.reduce with a maximum body from -inf; reduce_max_grad's: JAX's rule, the maxima
// as 1s and 0s (compare EQ with the spread max, convert), out_grad divided by their count,
// spread back and multiplied by the 1s and 0s.

// SAME on an NCHW pool: 5 -> 3 with a 3x3 window at stride 2 pads [1, 1].
// CHECK-LABEL: module @sum_pool_same_nchw
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<1x2x5x5xf32> loc("x"))
// CHECK-NEXT: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32> loc("p")
// CHECK-NEXT: %[[P:[^ ]+]] = "stablehlo.reduce_window"(%[[X]], %[[ZERO]]) ({
// CHECK-NEXT: ^bb0(%[[ACC:[^:]+]]: tensor<f32>, %[[VAL:[^:]+]]: tensor<f32>):
// CHECK-NEXT: %[[SUM:[^ ]+]] = stablehlo.add %[[ACC]], %[[VAL]] : tensor<f32>
// CHECK-NEXT: stablehlo.return %[[SUM]] : tensor<f32>
// CHECK-NEXT: }) {window_dimensions = array<i64: 1, 1, 3, 3>, window_strides = array<i64: 1, 1, 2, 2>,
// CHECK-SAME: base_dilations = array<i64: 1, 1, 1, 1>, window_dilations = array<i64: 1, 1, 1, 1>,
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0], [1, 1], [1, 1]]> : tensor<4x2xi64>}
// CHECK-SAME: : (tensor<1x2x5x5xf32>, tensor<f32>) -> tensor<1x2x3x3xf32> loc("p")
// CHECK-NEXT: return %[[P]] : tensor<1x2x3x3xf32>
module @sum_pool_same_nchw {
  func.func @main(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
    %p = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 1, 3, 3>, window_strides = array<i64: 1, 1, 2, 2>, padding = "SAME"} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
    func.return %p : tensor<1x2x3x3xf32>
  }
}

// -----

// Explicit pads and dilations on an i32 input: the integer 0 starts the sum.
// CHECK-LABEL: module @sum_pool_dilated_i32
// CHECK: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0> : tensor<i32> loc("p")
// CHECK-NEXT: %[[P:[^ ]+]] = "stablehlo.reduce_window"(%{{[^,]+}}, %[[ZERO]]) ({
// CHECK: stablehlo.add
// CHECK: }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 1>,
// CHECK-SAME: base_dilations = array<i64: 1, 2>, window_dilations = array<i64: 1, 2>,
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [1, 0]]> : tensor<2x2xi64>}
// CHECK-SAME: : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x6xi32> loc("p")
module @sum_pool_dilated_i32 {
  func.func @main(%x: tensor<3x4xi32>) -> tensor<3x6xi32> {
    %p = "convc.sum_pool"(%x) {window_dimensions = array<i64: 1, 2>, padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>, base_dilation = array<i64: 1, 2>, window_dilation = array<i64: 1, 2>} : (tensor<3x4xi32>) -> tensor<3x6xi32>
    func.return %p : tensor<3x6xi32>
  }
}

// -----

// reduce_max over dims 0 and 2, and its gradient.
// CHECK-LABEL: module @reduce_max_and_grad
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<2x3x4xf32> loc("x"), %[[G:[^:]+]]: tensor<3xf32> loc("g"))
// CHECK-NEXT: %[[LOW:[^ ]+]] = stablehlo.constant dense<"0x000080FF"> : tensor<f32> loc("m")
// CHECK-NEXT: %[[M:[^ ]+]] = stablehlo.reduce(%[[X]] init: %[[LOW]]) applies stablehlo.maximum across dimensions = [0, 2]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<3xf32> loc("m")
// CHECK-NEXT: %[[LOW2:[^ ]+]] = stablehlo.constant dense<"0x000080FF"> : tensor<f32> loc("d")
// CHECK-NEXT: %[[TOP:[^ ]+]] = stablehlo.reduce(%[[X]] init: %[[LOW2]]) applies stablehlo.maximum across dimensions = [0, 2]
// CHECK-NEXT: %[[TOPW:[^ ]+]] = stablehlo.broadcast_in_dim %[[TOP]], dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[AT:[^ ]+]] = stablehlo.compare EQ, %[[X]], %[[TOPW]], FLOAT : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xi1>
// CHECK-NEXT: %[[ONES:[^ ]+]] = stablehlo.convert %[[AT]] : (tensor<2x3x4xi1>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32>
// CHECK-NEXT: %[[COUNT:[^ ]+]] = stablehlo.reduce(%[[ONES]] init: %[[ZERO]]) applies stablehlo.add across dimensions = [0, 2]
// CHECK-NEXT: %[[SHARE:[^ ]+]] = stablehlo.divide %[[G]], %[[COUNT]] : tensor<3xf32>
// CHECK-NEXT: %[[SHAREW:[^ ]+]] = stablehlo.broadcast_in_dim %[[SHARE]], dims = [1] : (tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[D:[^ ]+]] = stablehlo.multiply %[[SHAREW]], %[[ONES]] : tensor<2x3x4xf32> loc("d")
// CHECK-NEXT: return %[[M]], %[[D]] : tensor<3xf32>, tensor<2x3x4xf32>
module @reduce_max_and_grad {
  func.func @main(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) -> (tensor<3xf32>, tensor<2x3x4xf32>) {
    %m = "convc.reduce_max"(%x) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
    %d = "convc.reduce_max_grad"(%x, %g) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
    func.return %m, %d : tensor<3xf32>, tensor<2x3x4xf32>
  }
}

// -----

// reduce_max of integers starts from the smallest i32.
// CHECK-LABEL: module @reduce_max_i32
// CHECK: stablehlo.constant dense<-2147483648> : tensor<i32>
// CHECK-NEXT: stablehlo.reduce({{.*}}) applies stablehlo.maximum across dimensions = [1]
module @reduce_max_i32 {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<2xi32> {
    %m = "convc.reduce_max"(%x) {axes = array<i64: 1>} : (tensor<2x3xi32>) -> tensor<2xi32>
    func.return %m : tensor<2xi32>
  }
}
