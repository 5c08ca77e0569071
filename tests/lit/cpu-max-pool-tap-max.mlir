// RUN: convc-opt %s -p cpu-max-pool-tap-max --split-input-file | filecheck %s
// RUN: convc-opt %s -p "cpu-max-pool-tap-max{max_taps=4}" --split-input-file | filecheck %s --check-prefix=LIMIT
// RUN: convc-opt %s -p "cpu-max-pool-tap-max{max_elements=500}" --split-input-file | filecheck %s --check-prefix=SIZE

// A float max pool becomes the maximum of its window's taps: the input padded with -inf as
// the pool pads it, one strided slice per window position (row-major), folded by maximum.

// ResNet's stem pool: 3x3, stride 2, SAME on a 9x9 map (pads 1 and 1).
// CHECK-LABEL: module @stem_pool
// CHECK: %[[P:.*]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 1, 0], [1, 1, 0], [0, 0, 0]]>
// CHECK-SAME: padding_value = "-inf"
// CHECK-SAME: -> tensor<2x11x11x4xf32>
// CHECK-NEXT: %[[T0:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 2, 9, 9, 4>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 2, 2, 1>}
// CHECK-SAME: -> tensor<2x5x5x4xf32>
// CHECK-NEXT: %[[T1:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 2, 9, 10, 4>, start_indices = array<i64: 0, 0, 1, 0>
// CHECK-COUNT-7: "convc.slice"(%[[P]])
// CHECK-NEXT: %[[M:.*]] = "convc.maximum"(%[[T0]], %[[T1]])
// CHECK-COUNT-6: "convc.maximum"
// CHECK-NEXT: %m = "convc.maximum"
// CHECK-NOT: convc.max_pool
// CHECK: func.return %m
// Nine window positions are more than max_taps = 4 allows (LIMIT).
// LIMIT-LABEL: module @stem_pool
// LIMIT: convc.max_pool
// Its input's 648 elements are more than max_elements = 500 allows (SIZE).
// SIZE-LABEL: module @stem_pool
// SIZE: convc.max_pool
module @stem_pool {
  func.func @main(%x: tensor<2x9x9x4xf32>) -> tensor<2x5x5x4xf32> {
    %m = "convc.max_pool"(%x) {padding = "SAME", window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<2x9x9x4xf32>) -> tensor<2x5x5x4xf32>
    func.return %m : tensor<2x5x5x4xf32>
  }
}

// -----

// Unpadded 2x2 stride-2 pool with a window dilation of 2 on H: no pad, four taps, the
// dilated row offsets 0 and 2.
// CHECK-LABEL: module @dilated_valid
// CHECK-NOT: convc.pad
// CHECK: "convc.slice"(%x) {limit_indices = array<i64: 1, 5, 7, 3>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 2, 2, 1>}
// CHECK: "convc.slice"(%x) {limit_indices = array<i64: 1, 5, 8, 3>, start_indices = array<i64: 0, 0, 1, 0>
// CHECK: "convc.slice"(%x) {limit_indices = array<i64: 1, 7, 7, 3>, start_indices = array<i64: 0, 2, 0, 0>
// CHECK: "convc.slice"(%x) {limit_indices = array<i64: 1, 7, 8, 3>, start_indices = array<i64: 0, 2, 1, 0>
// CHECK: %m = "convc.maximum"
// CHECK-SAME: -> tensor<1x3x4x3xf32>
// LIMIT-LABEL: module @dilated_valid
// LIMIT-NOT: convc.max_pool
// SIZE-LABEL: module @dilated_valid
// SIZE-NOT: convc.max_pool
module @dilated_valid {
  func.func @main(%x: tensor<1x7x8x3xf32>) -> tensor<1x3x4x3xf32> {
    %m = "convc.max_pool"(%x) {window_dilation = array<i64: 1, 2, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<1x7x8x3xf32>) -> tensor<1x3x4x3xf32>
    func.return %m : tensor<1x3x4x3xf32>
  }
}

// -----

// Left alone: an integer pool (%ints), a pool with base dilation (%based), one whose padding
// crops (%cropped), and a global pool's 49 window positions (%global).
// CHECK-LABEL: module @untouched
// CHECK-COUNT-4: convc.max_pool
// LIMIT-LABEL: module @untouched
// SIZE-LABEL: module @untouched
// CHECK-NOT: convc.maximum
module @untouched {
  func.func @main(%x: tensor<1x7x7x3xf32>, %i: tensor<1x7x7x3xi32>) -> (tensor<1x3x3x3xi32>, tensor<1x12x12x3xf32>, tensor<1x3x3x3xf32>, tensor<1x1x1x3xf32>) {
    %ints = "convc.max_pool"(%i) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<1x7x7x3xi32>) -> tensor<1x3x3x3xi32>
    %based = "convc.max_pool"(%x) {base_dilation = array<i64: 1, 2, 2, 1>, window_dimensions = array<i64: 1, 2, 2, 1>} : (tensor<1x7x7x3xf32>) -> tensor<1x12x12x3xf32>
    %cropped = "convc.max_pool"(%x) {padding = dense<[[0, 0], [0, -1], [0, -1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<1x7x7x3xf32>) -> tensor<1x3x3x3xf32>
    %global = "convc.max_pool"(%x) {window_dimensions = array<i64: 1, 7, 7, 1>} : (tensor<1x7x7x3xf32>) -> tensor<1x1x1x3xf32>
    func.return %ints, %based, %cropped, %global : tensor<1x3x3x3xi32>, tensor<1x12x12x3xf32>, tensor<1x3x3x3xf32>, tensor<1x1x1x3xf32>
  }
}
