// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w}" 2>/dev/null | filecheck %s
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w},infer-shapes,lower-conv-transpose,lower-conv-backprop-input,lower-conv-backprop-filter,canonicalize-dimension-numbers,resolve-padding,dce,cpu-crop-negative-padding,cpu-batch-group-tap-reduce,cpu-batch-group-to-feature-group,cpu-transposed-conv-phases,cpu-conv3d-as-conv2d-sum,cpu-conv-1x1-to-dot,cpu-depthwise-tap-sum,cpu-conv-eigen-path,dce" --emit=stablehlo 2>/dev/null | filecheck %s --check-prefix=CPU
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w}" 2>&1 >/dev/null | filecheck %s --check-prefix=ERR

// max_pool's gradient rule (compiler/ops/pool.py): a max_pool_grad of the cotangent over x
// with the pool's window, strides and pads made explicit; a base-dilated pool's x is spread
// by -inf first and its gradient sliced back; a window-dilated pool has no rule (G7). The
// second RUN line takes each step through the whole cpu pipeline (the default one for
// --target cpu) to StableHLO, checked by the MLIR verifier.

// A CNN stem, conv -> relu -> 3x3/2 SAME max pool (NHWC): x's and w's gradients pass through
// max_pool_grad, whose SAME pads are resolved as the pool's ([1, 1] for 5 -> 3 at stride 2).
// CHECK-LABEL: module @stem
// CHECK: func.func @main(%x: tensor<2x5x5x3xf32>, %w: tensor<3x3x3x4xf32>, %p.grad: tensor<2x3x3x4xf32>)
// CHECK: %[[R:[^ ]+]] = "convc.relu"
// CHECK-NEXT: %p = "convc.max_pool"(%[[R]])
// CHECK-NEXT: %[[D:[^ ]+]] = "convc.max_pool_grad"(%[[R]], %p.grad)
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>
// CHECK-SAME: window_dimensions = array<i64: 1, 3, 3, 1>
// CHECK-SAME: window_strides = array<i64: 1, 2, 2, 1>
// CHECK-SAME: (tensor<2x5x5x4xf32>, tensor<2x3x3x4xf32>) -> tensor<2x5x5x4xf32>
// CHECK-NEXT: "convc.relu_grad"(%[[D]], %{{[^)]+}})
// CPU-LABEL: module @stem
// CPU: "stablehlo.reduce_window"
// CPU: %[[D:[^ ]+]] = "stablehlo.select_and_scatter"
// CPU: stablehlo.compare GE
// CPU: stablehlo.add
// CPU: }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = dense<{{\[\[}}0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>}
// CPU-SAME: -> tensor<2x5x5x4xf32>
// CPU: stablehlo.compare GT
// CPU: stablehlo.convolution
module @stem {
  func.func @main(%x: tensor<2x5x5x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<2x3x3x4xf32> {
    %y = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = "SAME"} : (tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x5x5x4xf32>
    %r = "convc.relu"(%y) : (tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
    %p = "convc.max_pool"(%r) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = "SAME"} : (tensor<2x5x5x4xf32>) -> tensor<2x3x3x4xf32>
    func.return %p : tensor<2x3x3x4xf32>
  }
}

// -----

// Base dilation (NCHW): x is spread by -inf holes (a pad with interior 1), the holes' rows and
// columns then dropped from its gradient (a slice with stride 2); the pads stay the pool's.
// CHECK-LABEL: module @base_dilated
// CHECK: %[[S:[^ ]+]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 1]]> : tensor<4x3xi64>, padding_value = "-inf"}
// CHECK-SAME: -> tensor<1x2x7x7xf32>
// CHECK-NEXT: %[[DS:[^ ]+]] = "convc.max_pool_grad"(%[[S]], %p.grad) {padding = dense<{{\[\[}}0, 0], [0, 0], [1, 0], [0, 0]]> : tensor<4x2xi64>
// CHECK-SAME: window_strides = array<i64: 1, 1, 1, 2>
// CHECK-SAME: -> tensor<1x2x7x7xf32>
// CHECK-NEXT: %x.grad = "convc.slice"(%[[DS]]) {limit_indices = array<i64: 1, 2, 7, 7>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 2, 2>}
// CHECK-SAME: -> tensor<1x2x4x4xf32>
// CPU-LABEL: module @base_dilated
// CPU: stablehlo.pad %x, %{{[^,]+}}, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 1, 1]
// CPU: "stablehlo.select_and_scatter"
// CPU: stablehlo.slice %{{[^ ]+}} [0:1, 0:2, 0:7:2, 0:7:2]
module @base_dilated {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<1xf32>) -> tensor<1x2x7x3xf32> {
    %p = "convc.max_pool"(%x) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 1, 2>, base_dilation = array<i64: 1, 1, 2, 2>, padding = dense<[[0, 0], [0, 0], [1, 0], [0, 0]]> : tensor<4x2xi64>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x7x3xf32>
    func.return %p : tensor<1x2x7x3xf32>
  }
}

// -----

// G7: select_and_scatter has no window dilation (nor has jax.vjp's rule for a max pool).
// ERR: {{^}}{{.*}}grad-max-pool.mlir:[[# @LINE + 3]]:5: error: 'p' (max_pool): grad: max_pool's gradient is a select_and_scatter, which has no window dilation; window_dilation [1, 2, 2, 1] dilates a window of [1, 3, 3, 1] [G7]{{$}}
module @G7_window_dilation {
  func.func @main(%x: tensor<1x6x6x2xf32>, %w: tensor<1xf32>) -> tensor<1x2x2x2xf32> {
    %p = "convc.max_pool"(%x) {window_dimensions = array<i64: 1, 3, 3, 1>, window_dilation = array<i64: 1, 2, 2, 1>} : (tensor<1x6x6x2xf32>) -> tensor<1x2x2x2xf32>
    func.return %p : tensor<1x2x2x2xf32>
  }
}
