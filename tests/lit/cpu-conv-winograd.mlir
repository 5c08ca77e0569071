// RUN: convc-opt %s -p "cpu-conv-winograd{min_features=1 any_kernel=true}" --split-input-file | filecheck %s
// RUN: convc-opt %s -p "cpu-conv-winograd{min_features=1}" --split-input-file | filecheck %s --check-prefix=CONSTANT
// RUN: convc-opt %s -p cpu-conv-winograd --split-input-file | filecheck %s --check-prefix=DEFAULT

// A 3x3 stride-1 channels-last conv becomes Winograd F(2x2, 3x3): the input padded to whole
// 2x2 output blocks, sixteen stride-2 slices (the 4x4 tile's positions, row-major), their
// input transform (adds and subtracts) joined into [16, tiles, C] (four rows of four), one dot_general batched
// over the 16 with the transformed kernel, the output transform, and the blocks interleaved
// back into rows. The cost model takes only constant kernels (CONSTANT), and by default
// leaves these small convs alone.

// A SAME conv, 2 features in and 3 out, the kernel an argument: its transform is a dot_general
// with the constant G (x) G.
// CHECK-LABEL: module @same_conv
// CHECK: %[[PAD:[^ ]+]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 1, 0], [1, 1, 0], [0, 0, 0]]>
// CHECK-SAME: -> tensor<1x6x6x2xf32>
// CHECK: %[[T0:[^ ]+]] = "convc.slice"(%[[PAD]]) {limit_indices = array<i64: 1, 3, 3, 2>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 2, 2, 1>}
// CHECK: %[[T15:[^ ]+]] = "convc.slice"(%[[PAD]]) {limit_indices = array<i64: 1, 6, 6, 2>, start_indices = array<i64: 0, 3, 3, 0>, strides = array<i64: 1, 2, 2, 1>}
// CHECK: "convc.subtract"(%[[T0]], %{{[^ ]+}})
// CHECK-NOT: convc.negate
// CHECK: %[[ROW0:[^ ]+]] = "convc.concatenate"({{.*}}) {dimension = 1 : i64}
// CHECK-SAME: -> tensor<1x4x4x2xf32>
// CHECK-COUNT-3: "convc.concatenate"({{.*}}) {dimension = 1 : i64}
// CHECK: %[[ROWS:[^ ]+]] = "convc.concatenate"(%[[ROW0]], %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}}) {dimension = 0 : i64}
// CHECK-SAME: -> tensor<4x4x4x2xf32>
// CHECK: %[[V:[^ ]+]] = "convc.reshape"(%[[ROWS]]) {new_sizes = array<i64: 16, 4, 2>}
// CHECK: %[[TAPS:[^ ]+]] = "convc.reshape"(%w) {new_sizes = array<i64: 9, 6>}
// CHECK: %[[G:[^ ]+]] = "convc.constant"()
// CHECK-SAME: tensor<16x9xf32>
// CHECK: %[[UFLAT:[^ ]+]] = "convc.dot_general"(%[[G]], %[[TAPS]]) {lhs_contracting_dimensions = array<i64: 1>, precision = "HIGHEST", rhs_contracting_dimensions = array<i64: 0>}
// CHECK: %[[U:[^ ]+]] = "convc.reshape"(%[[UFLAT]]) {new_sizes = array<i64: 16, 2, 3>}
// CHECK: %[[M:[^ ]+]] = "convc.dot_general"(%[[V]], %[[U]]) {lhs_batching_dimensions = array<i64: 0>, lhs_contracting_dimensions = array<i64: 2>, rhs_batching_dimensions = array<i64: 0>, rhs_contracting_dimensions = array<i64: 1>}
// CHECK-SAME: -> tensor<16x4x3xf32>
// CHECK: "convc.slice"(%[[M]]) {limit_indices = array<i64: 16, 4, 3>, start_indices = array<i64: 15, 0, 0>}
// CHECK: %[[BLOCKS:[^ ]+]] = "convc.concatenate"({{.*}}) {dimension = 2 : i64}
// CHECK-SAME: -> tensor<1x2x2x2x2x3xf32>
// CHECK: %[[MAP:[^ ]+]] = "convc.reshape"(%[[BLOCKS]]) {new_sizes = array<i64: 1, 4, 4, 3>}
// CHECK: func.return %[[MAP]]
// CHECK-NOT: convc.conv
// CONSTANT-LABEL: module @same_conv
// CONSTANT: "convc.conv"
// DEFAULT-LABEL: module @same_conv
// DEFAULT: "convc.conv"
module @same_conv {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32>
    func.return %c : tensor<1x4x4x3xf32>
  }
}

// -----

// A constant kernel is transformed here, in f64: all ones gives the outer product of
// G·[1, 1, 1] = [1, 1.5, 0.5, 1] with itself. A 3x3 output takes 2x2 blocks of 2x2 (the
// input padded one row and column more at the high end), and the first 3x3 are kept.
// CHECK-LABEL: module @constant_kernel_odd_output
// CHECK: "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 2, 0], [1, 2, 0], [0, 0, 0]]>
// CHECK: %[[U:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[}}1.0]], {{\[\[}}1.5]], {{\[\[}}0.5]], {{\[\[}}1.0]], {{\[\[}}1.5]], {{\[\[}}2.25]], {{\[\[}}0.75]], {{\[\[}}1.5]], {{\[\[}}0.5]], {{\[\[}}0.75]], {{\[\[}}0.25]], {{\[\[}}0.5]], {{\[\[}}1.0]], {{\[\[}}1.5]], {{\[\[}}0.5]], {{\[\[}}1.0]]]> : tensor<16x1x1xf32>}
// CHECK: "convc.dot_general"(%{{[^ ]+}}, %[[U]])
// CHECK: %[[MAP:[^ ]+]] = "convc.reshape"({{.*}}) {new_sizes = array<i64: 1, 4, 4, 1>}
// CHECK: %c = "convc.slice"(%[[MAP]]) {limit_indices = array<i64: 1, 3, 3, 1>, start_indices = array<i64: 0, 0, 0, 0>}
// CHECK: func.return %c
// CONSTANT-LABEL: module @constant_kernel_odd_output
// CONSTANT-NOT: convc.conv
// CONSTANT: func.return %c
// DEFAULT-LABEL: module @constant_kernel_odd_output
// DEFAULT: "convc.conv"
module @constant_kernel_odd_output {
  func.func @main(%x: tensor<1x3x3x1xf32>) -> tensor<1x3x3x1xf32> {
    %w = "convc.constant"() {value = dense<1.0> : tensor<3x3x1x1xf32>} : () -> tensor<3x3x1x1xf32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x3x3x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x3x3x1xf32>
    func.return %c : tensor<1x3x3x1xf32>
  }
}

// -----

// Left alone: a strided conv (%strided), a dilated one (%dilated), a 5x5 kernel (%wide),
// a grouped conv (%grouped), a channels-first one (%nchw), an f16 one (%half) and one at HIGHEST
// precision (%highest: the direct sum, as lower-quantized's exact f32 sums of integers ask).
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.dot_general
// CHECK: %strided = "convc.conv"
// CHECK: %dilated = "convc.conv"
// CHECK: %wide = "convc.conv"
// CHECK: %grouped = "convc.conv"
// CHECK: %nchw = "convc.conv"
// CHECK: %half = "convc.conv"
// CHECK: %highest = "convc.conv"
module @untouched {
  func.func @main(%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x2xf32>, %w5: tensor<5x5x2x2xf32>, %g: tensor<3x3x1x2xf32>, %y: tensor<1x2x6x6xf32>, %v: tensor<2x2x3x3xf32>, %h: tensor<1x6x6x2xf16>, %wh: tensor<3x3x2x2xf16>) -> (tensor<1x3x3x2xf32>, tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>, tensor<1x2x6x6xf32>, tensor<1x6x6x2xf16>, tensor<1x6x6x2xf32>) {
    %strided = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>} : (tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32>
    %dilated = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[2, 2], [2, 2]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 2, 2>} : (tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32>
    %wide = "convc.conv"(%x, %w5) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[2, 2], [2, 2]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<5x5x2x2xf32>) -> tensor<1x6x6x2xf32>
    %grouped = "convc.conv"(%x, %g) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<3x3x1x2xf32>) -> tensor<1x6x6x2xf32>
    %nchw = "convc.conv"(%y, %v) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
    %half = "convc.conv"(%h, %wh) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf16>, tensor<3x3x2x2xf16>) -> tensor<1x6x6x2xf16>
    %highest = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, precision = "HIGHEST"} : (tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32>
    func.return %strided, %dilated, %wide, %grouped, %nchw, %half, %highest : tensor<1x3x3x2xf32>, tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>, tensor<1x2x6x6xf32>, tensor<1x6x6x2xf16>, tensor<1x6x6x2xf32>
  }
}
