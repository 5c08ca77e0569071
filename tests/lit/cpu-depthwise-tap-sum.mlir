// RUN: convc-opt %s -p cpu-depthwise-tap-sum --split-input-file | filecheck %s
// RUN: convc-opt %s -p "cpu-depthwise-tap-sum{max_terms=3}" --split-input-file | filecheck %s --check-prefix=LIMIT

// A feature-grouped conv becomes a sum over (kernel tap, input feature in the group) of
// an input window (sliced at tap * rhs_dilation, strided like the conv) times that tap's
// weights as a per-output-feature vector broadcast along the lhs feature dim.

// Depthwise, 2x1 kernel, stride 2 in H, pad 1 low: the input is padded once, then one
// slice per tap (rows 0,2 and 1,3), weights w[tap, 0, 0, :] spread along C.
// CHECK-LABEL: module @depthwise
// CHECK: %[[P:.*]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]>
// CHECK: %[[X0:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 1, 3, 4, 3>, start_indices = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 2, 1, 1>}
// CHECK: %[[W0:.*]] = "convc.slice"(%w) {limit_indices = array<i64: 1, 1, 1, 3>, start_indices = array<i64: 0, 0, 0, 0>}
// CHECK: %[[V0:.*]] = "convc.reshape"(%[[W0]]) {new_sizes = array<i64: 3>}
// CHECK: %[[B0:.*]] = "convc.broadcast_in_dim"(%[[V0]]) {broadcast_dimensions = array<i64: 3>, shape = array<i64: 1, 2, 4, 3>}
// CHECK: %[[T0:.*]] = "convc.multiply"(%[[X0]], %[[B0]])
// CHECK: %[[X1:.*]] = "convc.slice"(%[[P]]) {limit_indices = array<i64: 1, 4, 4, 3>, start_indices = array<i64: 0, 1, 0, 0>, strides = array<i64: 1, 2, 1, 1>}
// CHECK: %[[W1:.*]] = "convc.slice"(%w) {limit_indices = array<i64: 2, 1, 1, 3>, start_indices = array<i64: 1, 0, 0, 0>}
// CHECK: %[[T1:.*]] = "convc.multiply"(%[[X1]],
// CHECK: %c = "convc.add"(%[[T0]], %[[T1]]) : {{.*}} -> tensor<1x2x4x3xf32>
// CHECK-NOT: convc.conv
// LIMIT-LABEL: module @depthwise
// LIMIT-NOT: convc.conv
module @depthwise {
  func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<2x1x1x3xf32>) -> tensor<1x2x4x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 3 : i64, padding = dense<[[1, 0], [0, 0]]> : tensor<2x2xi64>, window_strides = array<i64: 2, 1>} : (tensor<1x4x4x3xf32>, tensor<2x1x1x3xf32>) -> tensor<1x2x4x3xf32>
    func.return %c : tensor<1x2x4x3xf32>
  }
}

// -----

// Two groups of 2 inputs and 3 outputs, NCHW in, NHWC out, 1x2 kernel dilated by 2:
// C splits into (G=2, 2), each of the 4 terms takes input feature i of both groups
// (broadcast over the 3 outputs per group) times w[:, i, tap] as a (2, 3) matrix;
// the (G, 3) result merges into 6 features and is transposed to NHWC.
// CHECK-LABEL: module @grouped
// CHECK: %[[G:.*]] = "convc.reshape"(%x) {new_sizes = array<i64: 1, 2, 2, 3, 3>}
// CHECK: %[[X0:.*]] = "convc.slice"(%[[G]]) {limit_indices = array<i64: 1, 2, 1, 3, 1>, start_indices = array<i64: 0, 0, 0, 0, 0>
// CHECK: %[[S0:.*]] = "convc.broadcast_in_dim"(%[[X0]]) {broadcast_dimensions = array<i64: 0, 1, 2, 3, 4>, shape = array<i64: 1, 2, 3, 3, 1>}
// CHECK: %[[W0:.*]] = "convc.slice"(%w) {limit_indices = array<i64: 6, 1, 1, 1>, start_indices = array<i64: 0, 0, 0, 0>}
// CHECK: %[[V0:.*]] = "convc.reshape"(%[[W0]]) {new_sizes = array<i64: 2, 3>}
// CHECK: "convc.broadcast_in_dim"(%[[V0]]) {broadcast_dimensions = array<i64: 1, 2>, shape = array<i64: 1, 2, 3, 3, 1>}
// the second input feature of each group, same tap
// CHECK: "convc.slice"(%[[G]]) {limit_indices = array<i64: 1, 2, 2, 3, 1>, start_indices = array<i64: 0, 0, 1, 0, 0>
// the second tap sits rhs_dilation = 2 columns further
// CHECK: "convc.slice"(%[[G]]) {limit_indices = array<i64: 1, 2, 1, 3, 3>, start_indices = array<i64: 0, 0, 0, 0, 2>
// CHECK: "convc.slice"(%[[G]]) {limit_indices = array<i64: 1, 2, 2, 3, 3>, start_indices = array<i64: 0, 0, 1, 0, 2>
// CHECK-COUNT-3: "convc.add"
// CHECK: %[[M:.*]] = "convc.reshape"({{.*}}) {new_sizes = array<i64: 1, 6, 3, 1>}
// CHECK: %c = "convc.transpose"(%[[M]]) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x6x3x1xf32>) -> tensor<1x3x1x6xf32>
// 4 terms exceed max_terms=3: left alone.
// LIMIT-LABEL: module @grouped
// LIMIT: %c = "convc.conv"(%x, %w)
module @grouped {
  func.func @main(%x: tensor<1x4x3x3xf32>, %w: tensor<6x2x1x2xf32>) -> tensor<1x3x1x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 2>} : (tensor<1x4x3x3xf32>, tensor<6x2x1x2xf32>) -> tensor<1x3x1x6xf32>
    func.return %c : tensor<1x3x1x6xf32>
  }
}

// -----

// Not rewritten: an ungrouped conv, an lhs-dilated one, an f16 one (the sum would run
// in f16), one with preferred_element_type wider than its operands.
// CHECK-LABEL: module @untouched
// CHECK-COUNT-4: "convc.conv"
// CHECK-NOT: convc.multiply
module @untouched {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<2x2x2x2xf32>, %wd: tensor<2x2x1x2xf32>, %h: tensor<1x4x4x2xf16>, %wh: tensor<2x2x1x2xf16>) -> (tensor<1x3x3x2xf32>, tensor<1x6x6x2xf32>, tensor<1x3x3x2xf16>, tensor<1x3x3x2xf32>) {
    %dense = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<2x2x2x2xf32>) -> tensor<1x3x3x2xf32>
    %dilated = "convc.conv"(%x, %wd) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, lhs_dilation = array<i64: 2, 2>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<2x2x1x2xf32>) -> tensor<1x6x6x2xf32>
    %half = "convc.conv"(%h, %wh) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf16>, tensor<2x2x1x2xf16>) -> tensor<1x3x3x2xf16>
    %wide = "convc.conv"(%h, %wh) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, preferred_element_type = f32} : (tensor<1x4x4x2xf16>, tensor<2x2x1x2xf16>) -> tensor<1x3x3x2xf32>
    func.return %dense, %dilated, %half, %wide : tensor<1x3x3x2xf32>, tensor<1x6x6x2xf32>, tensor<1x3x3x2xf16>, tensor<1x3x3x2xf32>
  }
}

// -----

// A sum read, through its BatchNorm-like scale, by two readers whose chains do not meet
// (a training step's forward clip and backward mask): behind an optimization_barrier, so
// that XLA computes it once instead of inside each reader's fusion.
// CHECK-LABEL: module @shared_through_scale
// CHECK: %[[SUM:.*]] = "convc.multiply"(%c.window, %c.scale)
// CHECK-NEXT: %c = "convc.optimization_barrier"(%[[SUM]]) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK: %scaled = "convc.multiply"(%c, %s)
// CHECK: %clip = "convc.clamp"(%scaled)
// CHECK: %mask = "convc.negate"(%scaled)
module @shared_through_scale {
  func.func @main(%x: tensor<1x2x2x3xf32>, %w: tensor<1x1x1x3xf32>, %s: tensor<1x2x2x3xf32>) -> (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 3 : i64, padding = dense<0> : tensor<2x2xi64>} : (tensor<1x2x2x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x2x2x3xf32>
    %scaled = "convc.multiply"(%c, %s) : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
    %clip = "convc.clamp"(%scaled) {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
    %mask = "convc.negate"(%scaled) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
    func.return %clip, %mask : tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>
  }
}

// -----

// A SiLU's two readers meet again in its product, which XLA fuses into one loop: no barrier.
// CHECK-LABEL: module @silu_readers_meet
// CHECK-NOT: optimization_barrier
// CHECK: %silu = "convc.multiply"(%c, %gate)
module @silu_readers_meet {
  func.func @main(%x: tensor<1x2x2x3xf32>, %w: tensor<1x1x1x3xf32>) -> tensor<1x2x2x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 3 : i64, padding = dense<0> : tensor<2x2xi64>} : (tensor<1x2x2x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x2x2x3xf32>
    %gate = "convc.logistic"(%c) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
    %silu = "convc.multiply"(%c, %gate) : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
    func.return %silu : tensor<1x2x2x3xf32>
  }
}
