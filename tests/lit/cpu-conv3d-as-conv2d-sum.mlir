// RUN: convc-opt %s -p cpu-conv3d-as-conv2d-sum --split-input-file | filecheck %s

// A conv with 3 spatial dims is a sum over the taps t of one spatial dim D (the "peeled"
// dim) of 2-D convs: the input rows tap t reads for every output row (a strided slice
// starting at t * rhs_dilation) are folded into the batch, the kernel slab w[t] loses
// its D dim, and the sum of the 2-D results is split back into (N, D_out).

// NDHWC, D right after N: no transpose. Two depth taps, so two 2-D convs over 2*3 slices.
// CHECK-LABEL: module @conv3d
// CHECK: %[[R0:.*]] = "convc.slice"(%x) {limit_indices = array<i64: 2, 3, 5, 5, 3>, start_indices = array<i64: 0, 0, 0, 0, 0>
// CHECK: %[[F0:.*]] = "convc.reshape"(%[[R0]]) {new_sizes = array<i64: 6, 5, 5, 3>}
// CHECK: %[[T0:.*]] = "convc.slice"(%w) {limit_indices = array<i64: 1, 3, 3, 3, 4>, start_indices = array<i64: 0, 0, 0, 0, 0>}
// CHECK: %[[K0:.*]] = "convc.reshape"(%[[T0]]) {new_sizes = array<i64: 3, 3, 3, 4>}
// CHECK: %[[C0:.*]] = "convc.conv"(%[[F0]], %[[K0]])
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]>
// CHECK-SAME: -> tensor<6x5x5x4xf32>
// CHECK: %[[R1:.*]] = "convc.slice"(%x) {limit_indices = array<i64: 2, 4, 5, 5, 3>, start_indices = array<i64: 0, 1, 0, 0, 0>
// CHECK: %[[C1:.*]] = "convc.conv"
// CHECK: %[[S:.*]] = "convc.add"(%[[C0]], %[[C1]])
// CHECK: %c = "convc.reshape"(%[[S]]) {new_sizes = array<i64: 2, 3, 5, 5, 4>}
module @conv3d {
  func.func @main(%x: tensor<2x4x5x5x3xf32>, %w: tensor<2x3x3x3x4xf32>) -> tensor<2x3x5x5x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]>, padding = dense<[[0, 0], [1, 1], [1, 1]]> : tensor<3x2xi64>} : (tensor<2x4x5x5x3xf32>, tensor<2x3x3x3x4xf32>) -> tensor<2x3x5x5x4xf32>
    func.return %c : tensor<2x3x5x5x4xf32>
  }
}

// -----

// NCDHW with a depth stride of 2 and a low depth pad: the input is padded once, each
// tap's rows are taken every 2 rows, moved next to N (a transpose) and folded; the
// result is split into (N, D_out) and moved back behind C.
// CHECK-LABEL: module @ncdhw
// CHECK: %[[P:.*]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]>
// CHECK: %[[R:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 2, 3, 3, 4, 4>, start_indices = array<i64: 0, 0, 0, 0, 0>, strides = array<i64: 1, 1, 2, 1, 1>}
// CHECK: %[[M:.*]] = "convc.transpose"(%[[R]]) {permutation = array<i64: 0, 2, 1, 3, 4>}
// CHECK: "convc.reshape"(%[[M]]) {new_sizes = array<i64: 4, 3, 4, 4>}
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>
// CHECK-COUNT-2: "convc.add"
// CHECK: %[[U:.*]] = "convc.reshape"({{.*}}) {new_sizes = array<i64: 2, 2, 4, 4, 4>}
// CHECK: %c = "convc.transpose"(%[[U]]) {permutation = array<i64: 0, 2, 1, 3, 4>} : {{.*}} -> tensor<2x4x2x4x4xf32>
module @ncdhw {
  func.func @main(%x: tensor<2x3x5x4x4xf32>, %w: tensor<4x3x3x1x1xf32>) -> tensor<2x4x2x4x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2]>, padding = dense<[[1, 0], [0, 0], [0, 0]]> : tensor<3x2xi64>, window_strides = array<i64: 2, 1, 1>} : (tensor<2x3x5x4x4xf32>, tensor<4x3x3x1x1xf32>) -> tensor<2x4x2x4x4xf32>
    func.return %c : tensor<2x4x2x4x4xf32>
  }
}

// -----

// Not rewritten: 2 spatial dims; batch groups.
// CHECK-LABEL: module @untouched
// CHECK-COUNT-2: "convc.conv"(%x
// CHECK-NOT: convc.add
module @untouched {
  func.func @main(%x: tensor<2x4x4x2xf32>, %w: tensor<3x3x2x2xf32>, %x3: tensor<2x3x3x3x2xf32>, %w3: tensor<1x1x1x2x2xf32>) -> (tensor<2x2x2x2xf32>, tensor<1x3x3x3x2xf32>) {
    %c2 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<2x2x2x2xf32>
    %bg = "convc.conv"(%x3, %w3) {batch_group_count = 2 : i64, dimension_numbers = #convc.dims<[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]>, padding = dense<[[0, 0], [0, 0], [0, 0]]> : tensor<3x2xi64>} : (tensor<2x3x3x3x2xf32>, tensor<1x1x1x2x2xf32>) -> tensor<1x3x3x3x2xf32>
    func.return %c2, %bg : tensor<2x2x2x2xf32>, tensor<1x3x3x3x2xf32>
  }
}
