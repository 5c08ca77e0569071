// RUN: convc-opt %s -p cpu-conv-eigen-path --split-input-file | filecheck %s
// RUN: convc-opt %s -p "cpu-conv-eigen-path{max_extra=124}" --split-input-file | filecheck %s --check-prefix=LIMIT

// A dense 2-D f32 conv whose output is no larger than its input grows, on one spatial
// dim, the output rows that make it larger (one more stride of high padding per row),
// and a slice drops them: XLA:CPU then runs it on Eigen instead of YNNPACK. The dim
// needing the fewest rows is grown, ties going to the outermost dim of the output.

// SAME 3x3, stride 1, NHWC: one row more in H (the outer spatial dim), then sliced.
// CHECK-LABEL: module @same_nhwc
// CHECK: %[[G:.*]] = "convc.conv"(%x, %w)
// CHECK-SAME: padding = dense<{{\[\[}}1, 2], [1, 1]]>
// CHECK-SAME: -> tensor<2x9x8x32xf32>
// CHECK-NEXT: %c = "convc.slice"(%[[G]]) {limit_indices = array<i64: 2, 8, 8, 32>, start_indices = array<i64: 0, 0, 0, 0>
// CHECK-SAME: -> tensor<2x8x8x32xf32>
// One row on 8 is 125 per 1000, more than max_extra = 124 allows (LIMIT).
// LIMIT-LABEL: module @same_nhwc
// LIMIT-NOT: convc.slice
module @same_nhwc {
  func.func @main(%x: tensor<2x8x8x32xf32>, %w: tensor<3x3x32x32xf32>) -> tensor<2x8x8x32xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x8x8x32xf32>, tensor<3x3x32x32xf32>) -> tensor<2x8x8x32xf32>
    func.return %c : tensor<2x8x8x32xf32>
  }
}

// -----

// VALID 3x3 with W stride 2 in NCHW: H needs 3 rows (26 in, 24 out), W needs 7 (10 in,
// 4 out), so H grows by 3 (3 x its stride 1 of high padding): 125 per 1000 output rows,
// the default limit; more than max_extra = 124 allows (LIMIT).
// CHECK-LABEL: module @valid_nchw
// CHECK: %[[G:.*]] = "convc.conv"(%x, %w)
// CHECK-SAME: padding = dense<{{\[\[}}0, 3], [0, 0]]>
// CHECK-SAME: -> tensor<1x24x27x4xf32>
// CHECK-NEXT: %c = "convc.slice"(%[[G]]) {limit_indices = array<i64: 1, 24, 24, 4>
// LIMIT-LABEL: module @valid_nchw
// LIMIT-NOT: convc.slice
module @valid_nchw {
  func.func @main(%x: tensor<1x24x26x10xf32>, %w: tensor<24x24x3x3xf32>) -> tensor<1x24x24x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, window_strides = array<i64: 1, 2>} : (tensor<1x24x26x10xf32>, tensor<24x24x3x3xf32>) -> tensor<1x24x24x4xf32>
    func.return %c : tensor<1x24x24x4xf32>
  }
}

// -----

// Left to YNNPACK's rules (no rewrite): at most 16 features, a grouped conv, an f16
// conv, a 1-D conv, an lhs-dilated conv (Eigen's already), and an output larger than
// its input (also already off YNNPACK).
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.slice
module @untouched {
  func.func @main(%x: tensor<2x8x8x16xf32>, %w: tensor<3x3x16x16xf32>, %g: tensor<2x8x8x32xf32>, %wg: tensor<3x3x16x32xf32>, %h: tensor<2x8x8x32xf16>, %wh: tensor<3x3x32x32xf16>, %l: tensor<2x8x32xf32>, %wl: tensor<3x32x32xf32>, %d: tensor<2x8x8x32xf32>, %wd: tensor<3x3x32x32xf32>) -> (tensor<2x8x8x16xf32>, tensor<2x8x8x32xf32>, tensor<2x8x8x32xf16>, tensor<2x8x32xf32>, tensor<2x15x15x32xf32>, tensor<2x10x8x32xf32>) {
    %narrow = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<2x8x8x16xf32>
    %grouped = "convc.conv"(%g, %wg) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x8x8x32xf32>, tensor<3x3x16x32xf32>) -> tensor<2x8x8x32xf32>
    %half = "convc.conv"(%h, %wh) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x8x8x32xf16>, tensor<3x3x32x32xf16>) -> tensor<2x8x8x32xf16>
    %line = "convc.conv"(%l, %wl) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, padding = dense<[[1, 1]]> : tensor<1x2xi64>} : (tensor<2x8x32xf32>, tensor<3x32x32xf32>) -> tensor<2x8x32xf32>
    %dilated = "convc.conv"(%d, %wd) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, lhs_dilation = array<i64: 2, 2>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x8x8x32xf32>, tensor<3x3x32x32xf32>) -> tensor<2x15x15x32xf32>
    %larger = "convc.conv"(%d, %wd) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[2, 2], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x8x8x32xf32>, tensor<3x3x32x32xf32>) -> tensor<2x10x8x32xf32>
    func.return %narrow, %grouped, %half, %line, %dilated, %larger : tensor<2x8x8x16xf32>, tensor<2x8x8x32xf32>, tensor<2x8x8x32xf16>, tensor<2x8x32xf32>, tensor<2x15x15x32xf32>, tensor<2x10x8x32xf32>
  }
}
