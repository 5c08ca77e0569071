// RUN: convc-opt %s -p "cpu-pad-before-pointwise{max_extra=1000}" --split-input-file | filecheck %s
// RUN: convc-opt %s -p cpu-pad-before-pointwise --split-input-file | filecheck %s --check-prefix=LIMIT

// A depthwise conv over a 1x1 conv's bias and ReLU6 reads no padded copy: the 1x1 conv's
// input is padded as the depthwise conv pads, the 1x1 conv and the chain run at the padded
// size, a select on a mask (ones inside, zeros on the border: `relu_grad` keeps what is over a
// positive mask) puts padding's +0 wherever the chain made the border, and the depthwise conv
// runs unpadded. The old 1x1 conv and chain are gone.

// CHECK-LABEL: module @relu6_chain
// CHECK: %[[P:.*]] = "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [1, 1, 0], [1, 1, 0], [0, 0, 0]]>
// CHECK-SAME: -> tensor<1x8x8x2xf32>
// CHECK-NEXT: %[[E:.*]] = "convc.conv"(%[[P]], %w)
// CHECK-SAME: -> tensor<1x8x8x4xf32>
// CHECK-NEXT: %[[B:.*]] = "convc.bias_add"(%[[E]], %b)
// CHECK-NEXT: %[[R:.*]] = "convc.clamp"(%[[B]]) {max = 6.0 : f64, min = 0.0 : f64}
// CHECK-NEXT: %[[ONE:.*]] = "convc.constant"() {value = dense<1.0> : tensor<f32>}
// CHECK-NEXT: %[[IN:.*]] = "convc.broadcast_in_dim"(%[[ONE]])
// CHECK-SAME: -> tensor<6x6xf32>
// CHECK-NEXT: %[[BORDER:.*]] = "convc.pad"(%[[IN]]) {padding_config = dense<{{\[\[}}1, 1, 0], [1, 1, 0]]>
// CHECK-NEXT: %[[MASK:.*]] = "convc.broadcast_in_dim"(%[[BORDER]]) {broadcast_dimensions = array<i64: 1, 2>, shape = array<i64: 1, 8, 8, 4>}
// CHECK-NEXT: %[[M:.*]] = "convc.relu_grad"(%[[R]], %[[MASK]])
// CHECK-NEXT: %d = "convc.conv"(%[[M]], %k)
// CHECK-SAME: feature_group_count = 4 : i64, padding = dense<{{\[\[}}0, 0], [0, 0]]>
// CHECK-SAME: (tensor<1x8x8x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
// CHECK-NEXT: func.return %d
// Six rows of 1x1 work on 36 is more than max_extra = 80 per 1000 allows (LIMIT).
// LIMIT-LABEL: module @relu6_chain
// LIMIT-NOT: convc.relu_grad
module @relu6_chain {
  func.func @main(%x: tensor<1x6x6x2xf32>, %k: tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32> {
    %w = "convc.constant"() {value = dense<0.5> : tensor<1x1x2x4xf32>} : () -> tensor<1x1x2x4xf32>
    %b = "convc.constant"() {value = dense<0.25> : tensor<4xf32>} : () -> tensor<4xf32>
    %e = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %eb = "convc.bias_add"(%e, %b) {axis = 3 : i64} : (tensor<1x6x6x4xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
    %r = "convc.clamp"(%eb) {max = 6.0 : f64, min = 0.0 : f64} : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %d = "convc.conv"(%r, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    func.return %d : tensor<1x6x6x4xf32>
  }
}

// -----

// NCHW, a relu, and a strided depthwise conv padded on the high side only: the 1x1 conv's
// input is padded on the same sides of its own spatial dims.
// CHECK-LABEL: module @nchw_strided_relu
// CHECK: "convc.pad"(%x) {padding_config = dense<{{\[\[}}0, 0, 0], [0, 0, 0], [0, 1, 0], [0, 1, 0]]>
// CHECK-SAME: -> tensor<2x3x7x7xf32>
// CHECK: %[[R:.*]] = "convc.relu"
// CHECK: "convc.relu_grad"(%[[R]],
// CHECK: %d = "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]>
// CHECK-SAME: window_strides = array<i64: 2, 2>
// CHECK-SAME: (tensor<2x5x7x7xf32>, tensor<5x1x3x3xf32>) -> tensor<2x5x3x3xf32>
module @nchw_strided_relu {
  func.func @main(%x: tensor<2x3x6x6xf32>, %k: tensor<5x1x3x3xf32>) -> tensor<2x5x3x3xf32> {
    %w = "convc.constant"() {value = dense<-0.5> : tensor<5x3x1x1xf32>} : () -> tensor<5x3x1x1xf32>
    %e = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x3x6x6xf32>, tensor<5x3x1x1xf32>) -> tensor<2x5x6x6xf32>
    %r = "convc.relu"(%e) : (tensor<2x5x6x6xf32>) -> tensor<2x5x6x6xf32>
    %d = "convc.conv"(%r, %k) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 5 : i64, padding = dense<[[0, 1], [0, 1]]> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>} : (tensor<2x5x6x6xf32>, tensor<5x1x3x3xf32>) -> tensor<2x5x3x3xf32>
    func.return %d : tensor<2x5x3x3xf32>
  }
}

// -----

// A depthwise conv pinned to the tap sum (by --autotune or by hand) keeps its pin.
// CHECK-LABEL: module @pinned_to_the_tap_sum
// CHECK: "convc.relu_grad"
// CHECK: %d = "convc.conv"
// CHECK-SAME: lowering = "cpu-depthwise-tap-sum"
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]>
module @pinned_to_the_tap_sum {
  func.func @main(%x: tensor<1x6x6x2xf32>, %k: tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32> {
    %w = "convc.constant"() {value = dense<0.5> : tensor<1x1x2x4xf32>} : () -> tensor<1x1x2x4xf32>
    %e = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r = "convc.relu"(%e) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %d = "convc.conv"(%r, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, lowering = "cpu-depthwise-tap-sum", padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    func.return %d : tensor<1x6x6x4xf32>
  }
}

// -----

// A chain that may end below zero (a clamp from -1) over a 1x1 conv whose kernel is an
// argument: its border values may be negative, -0, inf or NaN, and the select makes each the +0
// that padding is, so any chain of cheap ops and any kernel are taken.
// CHECK-LABEL: module @signed_chain
// CHECK: %[[P:.*]] = "convc.pad"(%x)
// CHECK-NEXT: %[[E:.*]] = "convc.conv"(%[[P]], %w)
// CHECK-SAME: -> tensor<1x8x8x4xf32>
// CHECK-NEXT: %[[B:.*]] = "convc.bias_add"(%[[E]], %b)
// CHECK-NEXT: %[[Y:.*]] = "convc.clamp"(%[[B]]) {max = 6.0 : f64, min = -1.0 : f64}
// CHECK: %[[MASK:.*]] = "convc.broadcast_in_dim"{{.*}}shape = array<i64: 1, 8, 8, 4>
// CHECK-NEXT: %[[M:.*]] = "convc.relu_grad"(%[[Y]], %[[MASK]])
// CHECK-NEXT: %d = "convc.conv"(%[[M]], %k)
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 0]]>
// CHECK-NEXT: func.return %d
module @signed_chain {
  func.func @main(%x: tensor<1x6x6x2xf32>, %w: tensor<1x1x2x4xf32>, %b: tensor<4xf32>, %k: tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32> {
    %e = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %eb = "convc.bias_add"(%e, %b) {axis = 3 : i64} : (tensor<1x6x6x4xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
    %y = "convc.clamp"(%eb) {max = 6.0 : f64, min = -1.0 : f64} : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %d = "convc.conv"(%y, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    func.return %d : tensor<1x6x6x4xf32>
  }
}

// -----

// Left alone: the chain's value also returned (%shared); a chain that also reads a full-size
// value from outside it (%foreign); a SiLU chain, whose logistic is no cheap op (%silu); a dense, not depthwise, 3x3 conv (%dense); a strided 1x1
// conv (%strided_1x1); a depthwise conv without padding (%valid); a depthwise conv pinned to
// XLA's own conv (%pinned).
// CHECK-LABEL: module @untouched
// CHECK-NOT: convc.relu_grad
module @untouched {
  func.func @main(%x: tensor<1x6x6x2xf32>, %y: tensor<1x6x6x4xf32>, %k: tensor<3x3x1x4xf32>, %kd: tensor<3x3x4x4xf32>, %x2: tensor<1x12x12x2xf32>) -> (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x4x4x4xf32>, tensor<1x6x6x4xf32>) {
    %w = "convc.constant"() {value = dense<0.5> : tensor<1x1x2x4xf32>} : () -> tensor<1x1x2x4xf32>
    %e1 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r1 = "convc.relu"(%e1) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %shared = "convc.conv"(%r1, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    %e2 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r2 = "convc.add"(%e2, %y) : (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %foreign = "convc.conv"(%r2, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    %e3 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %s3 = "convc.logistic"(%e3) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %r3 = "convc.multiply"(%e3, %s3) : (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %silu = "convc.conv"(%r3, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    %e4 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r4 = "convc.relu"(%e4) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %dense = "convc.conv"(%r4, %kd) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>
    %e5 = "convc.conv"(%x2, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>} : (tensor<1x12x12x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r5 = "convc.relu"(%e5) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %strided_1x1 = "convc.conv"(%r5, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    %e6 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r6 = "convc.relu"(%e6) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %valid = "convc.conv"(%r6, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x4x4x4xf32>
    %e7 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x6x6x4xf32>
    %r7 = "convc.relu"(%e7) : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
    %pinned = "convc.conv"(%r7, %k) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, lowering = "xla", padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x6x6x4xf32>
    func.return %shared, %r1, %foreign, %silu, %dense, %strided_1x1, %valid, %pinned : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x4x4x4xf32>, tensor<1x6x6x4xf32>
  }
}
