// RUN: convc-opt %s --default-pipeline cpu --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --default-pipeline cpu --split-input-file | filecheck %s --check-prefix=STATUS

// A conv's `lowering` pin, wrong: each case is one located line, the whole file exits 1.
// P1 (the verifier) is checked as the IR is read; P2 when the pass the pin names runs.
// STATUS-NOT: Traceback
// STATUS-COUNT-6: {{^}}{{.*}}verify-conv-lowering.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'c' (conv): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 6{{$}}

// P1: the pin names "xla" or a cpu rewrite pass.
module @p1_unknown {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'c' (conv): lowering must be one of xla, cpu-batch-group-tap-reduce, cpu-batch-group-to-feature-group, cpu-transposed-conv-phases, cpu-conv3d-as-conv2d-sum, cpu-conv-1x1-to-dot, cpu-depthwise-tap-sum, cpu-small-map-im2col, cpu-conv-winograd, cpu-conv-eigen-path, got 'cpu-winograd' [P1]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, lowering = "cpu-winograd"} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %c : tensor<1x4x4x2xf32>
  }
}

// -----

// A pin is a string (an attribute kind error, A1).
module @not_a_string {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32> {
    // expected-error@+1 {{'c' (conv): lowering must be a string, got 1 [A1]}}
    %c = "convc.conv"(%x, %w) {lowering = 1 : i64} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
    func.return %c : tensor<1x4x4x2xf32>
  }
}

// -----

// P2: the pinned rewrite cannot compute this conv (a 3x3 kernel is no 1x1).
module @p2_not_1x1 {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x2x2x2xf32> {
    // expected-error@+1 {{'c' (conv): lowering "cpu-conv-1x1-to-dot" cannot compute this conv exactly: it needs an ungrouped conv with a kernel of 1 in every spatial dim, no padding and no lhs dilation, or a kernel as large as the input without padding or dilation [P2]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], lowering = "cpu-conv-1x1-to-dot"} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x2x2x2xf32>
    func.return %c : tensor<1x2x2x2xf32>
  }
}

// -----

// P2: an f16 tap sum would accumulate in f16, less precisely than XLA's conv.
module @p2_half_tap_sum {
  func.func @main(%x: tensor<1x4x4x2xf16>, %w: tensor<3x3x1x2xf16>) -> tensor<1x2x2x2xf16> {
    // expected-error@+1 {{'c' (conv): lowering "cpu-depthwise-tap-sum" cannot compute this conv exactly: it needs an f32/f64 feature-grouped conv {{.*}} [P2]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], feature_group_count = 2 : i64, lowering = "cpu-depthwise-tap-sum"} : (tensor<1x4x4x2xf16>, tensor<3x3x1x2xf16>) -> tensor<1x2x2x2xf16>
    func.return %c : tensor<1x2x2x2xf16>
  }
}

// -----

// P2: a conv without batch groups has nothing to regroup.
module @p2_no_batch_groups {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x2x2x2xf32> {
    // expected-error@+1 {{'c' (conv): lowering "cpu-batch-group-to-feature-group" cannot compute this conv exactly: it needs a batch-grouped conv (batch_group_count > 1) [P2]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], lowering = "cpu-batch-group-to-feature-group"} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x2x2x2xf32>
    func.return %c : tensor<1x2x2x2xf32>
  }
}

// -----

// P2: Winograd's F(2x2, 3x3) tiles a stride-1 output.
module @p2_strided_winograd {
  func.func @main(%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32> {
    // expected-error@+1 {{'c' (conv): lowering "cpu-conv-winograd" cannot compute this conv exactly: it needs an ungrouped channels-last 2-D f32/f64 conv with a 3x3 kernel, stride 1, no dilation, non-negative pads, no wider accumulation type and no HIGHEST precision [P2]}}
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = [[1, 1], [1, 1]], window_strides = [2, 2], lowering = "cpu-conv-winograd"} : (tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %c : tensor<1x3x3x2xf32>
  }
}
