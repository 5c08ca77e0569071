// RUN: convc-opt %s -p cpu-transposed-conv-phases --split-input-file | filecheck %s
// RUN: convc-opt %s -p "cpu-transposed-conv-phases{unbalanced=false}" --split-input-file | filecheck %s --check-prefix=BALANCED

// An lhs-dilated conv (dilation D) becomes one stride-1 conv per output phase p (output
// positions q*D + p): it uses kernel taps k0::D with k0 = (pad_lo - p) mod D over the
// undilated input, padded by -c, c = (p + k0 - pad_lo) / D. The phases are stacked on a
// new dim after the spatial dim and merged: out[q*D + p] = phase_p[q].
// With unbalanced=false (BALANCED) only where every phase gets the same number of taps, or
// the conv is grouped: elsewhere XLA's own lhs-dilated kernel measured faster before the
// phase convs moved to Eigen (cpu-conv-eigen-path).

// A stride-2 transposed 3-tap 1-D conv as lowered (pads 1, 2): phase 0 uses tap 1
// alone, phase 1 taps 0 and 2 with one zero row at the end.
// CHECK-LABEL: module @transposed_1d
// CHECK: %[[K0:.*]] = "convc.slice"(%w) {limit_indices = array<i64: 2, 2, 2>, start_indices = array<i64: 1, 0, 0>, strides = array<i64: 2, 1, 1>}
// CHECK-SAME: -> tensor<1x2x2xf32>
// CHECK: %[[P0:.*]] = "convc.conv"(%x, %[[K0]])
// CHECK-NOT: lhs_dilation
// CHECK-SAME: padding = dense<{{\[\[}}0, 0]]>
// CHECK-SAME: -> tensor<1x3x2xf32>
// CHECK: %[[K1:.*]] = "convc.slice"(%w) {limit_indices = array<i64: 3, 2, 2>, start_indices = array<i64: 0, 0, 0>, strides = array<i64: 2, 1, 1>}
// CHECK: %[[P1:.*]] = "convc.conv"(%x, %[[K1]])
// CHECK-SAME: padding = dense<{{\[\[}}0, 1]]>
// CHECK: %[[A0:.*]] = "convc.reshape"(%[[P0]]) {new_sizes = array<i64: 1, 3, 1, 2>}
// CHECK: %[[A1:.*]] = "convc.reshape"(%[[P1]]) {new_sizes = array<i64: 1, 3, 1, 2>}
// CHECK: %[[S:.*]] = "convc.concatenate"(%[[A0]], %[[A1]]) {dimension = 2 : i64}
// CHECK: %c = "convc.reshape"(%[[S]]) {new_sizes = array<i64: 1, 6, 2>}
// 1 and 2 taps: unbalanced, ungrouped, left to XLA with unbalanced=false.
// BALANCED-LABEL: module @transposed_1d
// BALANCED: %c = "convc.conv"(%x, %w) {{.*}}lhs_dilation = array<i64: 2>
// BALANCED-NOT: convc.concatenate
module @transposed_1d {
  func.func @main(%x: tensor<1x3x2xf32>, %w: tensor<3x2x2xf32>) -> tensor<1x6x2xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, lhs_dilation = array<i64: 2>, padding = dense<[[1, 2]]> : tensor<1x2xi64>} : (tensor<1x3x2xf32>, tensor<3x2x2xf32>) -> tensor<1x6x2xf32>
    func.return %c : tensor<1x6x2xf32>
  }
}

// -----

// Dilation 3 along H only, a 2-tap kernel, pad -1 low: phase 0 meets no tap (zeros),
// phases 1 and 2 read x from row 1 (the negative pad becomes a slice, not a conv pad);
// phase 2 is one row short, padded, and the 9 interleaved rows are trimmed to 8.
// W (dilation 1) keeps its pad on every phase conv.
// CHECK-LABEL: module @uneven
// CHECK: %[[Z:.*]] = "convc.constant"() {value = dense<0.0> : tensor<f32>}
// CHECK: %[[E:.*]] = "convc.broadcast_in_dim"(%[[Z]]) {broadcast_dimensions = array<i64>, shape = array<i64: 1, 3, 3, 1>}
// CHECK: %[[C1:.*]] = "convc.slice"(%x) {limit_indices = array<i64: 1, 4, 3, 2>, start_indices = array<i64: 0, 1, 0, 0>}
// CHECK: %[[P1:.*]] = "convc.conv"(%[[C1]],
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [1, 0]]>
// CHECK: %[[C2:.*]] = "convc.slice"(%x) {limit_indices = array<i64: 1, 3, 3, 2>, start_indices = array<i64: 0, 1, 0, 0>}
// CHECK: %[[P2:.*]] = "convc.conv"(%[[C2]],
// CHECK-SAME: -> tensor<1x2x3x1xf32>
// CHECK: %[[F:.*]] = "convc.pad"(%[[P2]]) {padding_config = dense<{{\[\[}}0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]]>
// CHECK: %[[A0:.*]] = "convc.reshape"(%[[E]])
// CHECK: %[[A1:.*]] = "convc.reshape"(%[[P1]])
// CHECK: %[[A2:.*]] = "convc.reshape"(%[[F]])
// CHECK: %[[S:.*]] = "convc.concatenate"(%[[A0]], %[[A1]], %[[A2]]) {dimension = 2 : i64}
// CHECK: %[[I:.*]] = "convc.reshape"(%[[S]]) {new_sizes = array<i64: 1, 9, 3, 1>}
// CHECK: %c = "convc.slice"(%[[I]]) {limit_indices = array<i64: 1, 8, 3, 1>, start_indices = array<i64: 0, 0, 0, 0>}
// BALANCED-LABEL: module @uneven
// BALANCED: %c = "convc.conv"(%x, %w)
module @uneven {
  func.func @main(%x: tensor<1x4x3x2xf32>, %w: tensor<2x2x2x1xf32>) -> tensor<1x8x3x1xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, lhs_dilation = array<i64: 3, 1>, padding = dense<[[-1, 0], [1, 0]]> : tensor<2x2xi64>} : (tensor<1x4x3x2xf32>, tensor<2x2x2x1xf32>) -> tensor<1x8x3x1xf32>
    func.return %c : tensor<1x8x3x1xf32>
  }
}

// -----

// A 4-tap kernel over dilation 2 (a 4x4 stride-2 transposed conv, in 1-D): two taps per
// phase, rewritten by default too.
// CHECK-LABEL: module @balanced
// BALANCED-LABEL: module @balanced
// BALANCED: "convc.slice"(%w) {limit_indices = array<i64: 3, 2, 2>, start_indices = array<i64: 0, 0, 0>, strides = array<i64: 2, 1, 1>}
// BALANCED: "convc.slice"(%w) {limit_indices = array<i64: 4, 2, 2>, start_indices = array<i64: 1, 0, 0>, strides = array<i64: 2, 1, 1>}
// BALANCED: "convc.concatenate"
// BALANCED-NOT: lhs_dilation
module @balanced {
  func.func @main(%x: tensor<1x3x2xf32>, %w: tensor<4x2x2xf32>) -> tensor<1x6x2xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, lhs_dilation = array<i64: 2>, padding = dense<[[2, 2]]> : tensor<1x2xi64>} : (tensor<1x3x2xf32>, tensor<4x2x2xf32>) -> tensor<1x6x2xf32>
    func.return %c : tensor<1x6x2xf32>
  }
}

// -----

// Grouped: XLA's lhs-dilated kernel does not apply, so unbalanced phases are rewritten too;
// the phase convs keep feature_group_count.
// CHECK-LABEL: module @grouped
// BALANCED-LABEL: module @grouped
// BALANCED-COUNT-2: "convc.conv"({{.*}}feature_group_count = 2 : i64
// BALANCED: "convc.concatenate"
module @grouped {
  func.func @main(%x: tensor<1x3x4xf32>, %w: tensor<3x2x4xf32>) -> tensor<1x6x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 2 : i64, lhs_dilation = array<i64: 2>, padding = dense<[[1, 2]]> : tensor<1x2xi64>} : (tensor<1x3x4xf32>, tensor<3x2x4xf32>) -> tensor<1x6x4xf32>
    func.return %c : tensor<1x6x4xf32>
  }
}

// -----

// Not rewritten: no lhs dilation; lhs dilation with a stride; with rhs dilation.
// CHECK-LABEL: module @untouched
// CHECK-COUNT-3: "convc.conv"(%x, %w)
// CHECK-NOT: convc.concatenate
// BALANCED-LABEL: module @untouched
// BALANCED-COUNT-3: "convc.conv"(%x, %w)
module @untouched {
  func.func @main(%x: tensor<1x4x2xf32>, %w: tensor<2x2x2xf32>) -> (tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x4x2xf32>) {
    %plain = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, padding = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<1x4x2xf32>, tensor<2x2x2xf32>) -> tensor<1x3x2xf32>
    %strided = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, lhs_dilation = array<i64: 2>, padding = dense<[[0, 0]]> : tensor<1x2xi64>, window_strides = array<i64: 2>} : (tensor<1x4x2xf32>, tensor<2x2x2xf32>) -> tensor<1x3x2xf32>
    %dilated = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, lhs_dilation = array<i64: 2>, padding = dense<[[0, 0]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 3>} : (tensor<1x4x2xf32>, tensor<2x2x2xf32>) -> tensor<1x4x2xf32>
    func.return %plain, %strided, %dilated : tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x4x2xf32>
  }
}
