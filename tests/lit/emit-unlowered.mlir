// RUN: convc-opt %s --split-input-file --emit=stablehlo -p canonicalize-dimension-numbers,resolve-padding --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file --emit=stablehlo -p canonicalize-dimension-numbers,resolve-padding | filecheck %s --check-prefix=STATUS
// RUN: convc-opt %s --split-input-file --emit=stablehlo --default-pipeline generic | filecheck %s --check-prefix=LOWERED

// StableHLO has no transposed conv or conv gradient: a pipeline that leaves one is a located
// user error naming the pass that lowers it [E2] (`LOWERED_BY` in convc.passes, read from
// the registry), never the emitter's internal error. The default pipelines run every one.
// STATUS-NOT: Traceback
// STATUS-COUNT-3: {{^}}{{.*}}emit-unlowered.mlir:{{[0-9]+}}:5: error: {{.*}} [E2]{{$}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 3{{$}}

// LOWERED-LABEL: module @transpose
// LOWERED-NOT: conv_transpose
// LOWERED: stablehlo.convolution
module @transpose {
  func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
    // expected-error@+1 {{'y' (conv_transpose): StableHLO has no conv_transpose op: the pipeline must run lower-conv-transpose (as the default pipelines do) [E2]}}
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>, tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %y : tensor<1x8x8x8xf32>
  }
}

// -----

// LOWERED-LABEL: module @backprop_input
// LOWERED-NOT: conv_backprop_input
// LOWERED: stablehlo.convolution
module @backprop_input {
  func.func @main(%g: tensor<1x3x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x4x4xf32> {
    // expected-error@+1 {{'dx' (conv_backprop_input): StableHLO has no conv_backprop_input op: the pipeline must run lower-conv-backprop-input (as the default pipelines do) [E2]}}
    %dx = "convc.conv_backprop_input"(%g, %w) {dimension_numbers = ["NC01", "OI01", "NC01"], input_shape = array<i64: 1, 2, 4, 4>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x3x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x4x4xf32>
    func.return %dx : tensor<1x2x4x4xf32>
  }
}

// -----

// LOWERED-LABEL: module @backprop_filter
// LOWERED-NOT: conv_backprop_filter
// LOWERED: stablehlo.convolution
module @backprop_filter {
  func.func @main(%x: tensor<1x2x4x4xf32>, %g: tensor<1x3x4x4xf32>) -> tensor<3x2x3x3xf32> {
    // expected-error@+1 {{'dw' (conv_backprop_filter): StableHLO has no conv_backprop_filter op: the pipeline must run lower-conv-backprop-filter (as the default pipelines do) [E2]}}
    %dw = "convc.conv_backprop_filter"(%x, %g) {dimension_numbers = ["NC01", "OI01", "NC01"], kernel_shape = array<i64: 3, 2, 3, 3>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<3x2x3x3xf32>
    func.return %dw : tensor<3x2x3x3xf32>
  }
}
