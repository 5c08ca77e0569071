// RUN: convc-opt %s -p cpu-layout-nhwc --split-input-file | filecheck %s
// A chain of three NCHW convs with bias_add and relu between: the input is transposed
// once, every conv reads and writes NHWC with an HWIO kernel folded into a new constant
// (the 2x2x1x2 OIHW kernel's values moved, not a runtime transpose; the 3x3 kernel the
// last two convs share transposed once), the bias runs along dim 3, and one transpose
// takes the last conv's result back to NCHW.
// CHECK-LABEL: module @conv_chain
// CHECK: %[[IN:.*]] = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-SAME: -> tensor<1x6x6x2xf32>
// CHECK: %[[K1:.*]] = "convc.constant"() {value = dense<{{\[\[\[\[}}1.0, 5.0], [3.0, 7.0]], {{\[\[}}2.0, 6.0], [4.0, 8.0]]]]> : tensor<1x2x2x2xf32>}
// CHECK: %[[C1:.*]] = "convc.conv"(%[[IN]], %[[K1]]) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// CHECK-SAME: padding = dense<{{\[\[}}0, 0], [0, 1]]>
// CHECK: %[[A1:.*]] = "convc.bias_add"(%[[C1]], %b) {axis = 3 : i64}
// CHECK: %[[R1:.*]] = "convc.relu"(%[[A1]]) : (tensor<1x6x6x2xf32>)
// CHECK: %[[K2:.*]] = "convc.constant"() {value = dense<0.5> : tensor<3x3x2x2xf32>}
// CHECK: %[[C2:.*]] = "convc.conv"(%[[R1]], %[[K2]]) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// CHECK-NOT: "convc.transpose"
// CHECK: %[[C3:.*]] = "convc.conv"(%[[C2]], %[[K2]])
// CHECK-SAME: -> tensor<1x6x6x2xf32>
// CHECK-NEXT: %c3 = "convc.transpose"(%[[C3]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-SAME: -> tensor<1x2x6x6xf32>
// CHECK-NEXT: func.return %c3
module @conv_chain {
  func.func @main(%x: tensor<1x2x6x6xf32>, %b: tensor<2xf32>) -> tensor<1x2x6x6xf32> {
    %w1 = "convc.constant"() {value = dense<[[[[1.0, 2.0]], [[3.0, 4.0]]], [[[5.0, 6.0]], [[7.0, 8.0]]]]> : tensor<2x2x1x2xf32>} : () -> tensor<2x2x1x2xf32>
    %w2 = "convc.constant"() {value = dense<0.5> : tensor<2x2x3x3xf32>} : () -> tensor<2x2x3x3xf32>
    %c1 = "convc.conv"(%x, %w1) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 1]]> : tensor<2x2xi64>} : (tensor<1x2x6x6xf32>, tensor<2x2x1x2xf32>) -> tensor<1x2x6x6xf32>
    %a1 = "convc.bias_add"(%c1, %b) {axis = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
    %r1 = "convc.relu"(%a1) : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
    %c2 = "convc.conv"(%r1, %w2) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
    %c3 = "convc.conv"(%c2, %w2) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
    func.return %c3 : tensor<1x2x6x6xf32>
  }
}

// -----

// A residual block: the add of the second conv's result and the first relu's, and the
// relu after it, compute NHWC; a kernel that is an argument keeps its OIHW spec (nothing
// to fold); one transpose in, one out.
// CHECK-LABEL: module @residual_add
// CHECK: %[[IN:.*]] = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C1:.*]] = "convc.conv"(%[[IN]], %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]>
// CHECK: %[[R1:.*]] = "convc.relu"(%[[C1]])
// CHECK: %[[C2:.*]] = "convc.conv"(%[[R1]], %w)
// CHECK: %[[SUM:.*]] = "convc.add"(%[[C2]], %[[R1]]) : (tensor<1x5x5x4xf32>, tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xf32>
// CHECK: %[[OUT:.*]] = "convc.relu"(%[[SUM]])
// CHECK-NEXT: %out = "convc.transpose"(%[[OUT]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: func.return %out
module @residual_add {
  func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32> {
    %c1 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32>
    %r1 = "convc.relu"(%c1) : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
    %c2 = "convc.conv"(%r1, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32>
    %sum = "convc.add"(%c2, %r1) : (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
    %out = "convc.relu"(%sum) : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
    func.return %out : tensor<1x4x5x5xf32>
  }
}

// -----

// A concatenation on the channel dim joins on dim 3; the graph input it also takes is
// the one transposed for the conv (made once).
// CHECK-LABEL: module @concat_channels
// CHECK: %[[IN:.*]] = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C:.*]] = "convc.conv"(%[[IN]], %w)
// CHECK: %[[CAT:.*]] = "convc.concatenate"(%[[IN]], %[[C]]) {dimension = 3 : i64}
// CHECK-SAME: -> tensor<1x4x4x5xf32>
// CHECK-NEXT: %cat = "convc.transpose"(%[[CAT]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-SAME: -> tensor<1x5x4x4xf32>
module @concat_channels {
  func.func @main(%x: tensor<1x3x4x4xf32>, %w: tensor<2x3x1x1xf32>) -> tensor<1x5x4x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
    %cat = "convc.concatenate"(%x, %c) {dimension = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x5x4x4xf32>
    func.return %cat : tensor<1x5x4x4xf32>
  }
}

// -----

// A max pool's window, strides and explicit padding rows move with the dims.
// CHECK-LABEL: module @pool
// CHECK: %[[C:.*]] = "convc.conv"
// CHECK: %[[P:.*]] = "convc.max_pool"(%[[C]]) {padding = dense<{{\[\[}}0, 0], [1, 0], [0, 1], [0, 0]]> : tensor<4x2xi64>
// CHECK-SAME: window_dimensions = array<i64: 1, 3, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>
// CHECK-SAME: -> tensor<1x4x3x2xf32>
// CHECK-NEXT: %p = "convc.transpose"(%[[P]]) {permutation = array<i64: 0, 3, 1, 2>}
module @pool {
  func.func @main(%x: tensor<1x2x8x6xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x4x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x2x8x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x8x6xf32>
    %p = "convc.max_pool"(%c) {padding = dense<[[0, 0], [0, 0], [1, 0], [0, 1]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 1, 3, 2>, window_strides = array<i64: 1, 1, 2, 2>} : (tensor<1x2x8x6xf32>) -> tensor<1x2x4x3xf32>
    func.return %p : tensor<1x2x4x3xf32>
  }
}

// -----

// A reshape flattens in the written (NCHW) order: the relu before it computes NHWC and
// is transposed back right before the reshape, which is unchanged.
// CHECK-LABEL: module @reshape_boundary
// CHECK: %[[R:.*]] = "convc.relu"(%{{.*}}) : (tensor<1x4x4x3xf32>)
// CHECK-NEXT: %[[BACK:.*]] = "convc.transpose"(%[[R]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-SAME: -> tensor<1x3x4x4xf32>
// CHECK-NEXT: %flat = "convc.reshape"(%[[BACK]]) {new_sizes = array<i64: 1, 48>}
module @reshape_boundary {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>) -> tensor<1x48xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
    %r = "convc.relu"(%c) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
    %flat = "convc.reshape"(%r) {new_sizes = array<i64: 1, 48>} : (tensor<1x3x4x4xf32>) -> tensor<1x48xf32>
    func.return %flat : tensor<1x48xf32>
  }
}

// -----

// An op the pass does not know (dot_general contracting a written dim) stops it: the
// conv's result goes back to NCHW before it, and the relu after it stays as written.
// CHECK-LABEL: module @unknown_op_boundary
// CHECK: %[[C:.*]] = "convc.conv"
// CHECK-SAME: -> tensor<1x4x4x3xf32>
// CHECK-NEXT: %[[BACK:.*]] = "convc.transpose"(%[[C]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: %d = "convc.dot_general"(%[[BACK]], %m) {lhs_contracting_dimensions = array<i64: 3>
// CHECK-NEXT: %r = "convc.relu"(%d) : (tensor<1x3x4x5xf32>)
module @unknown_op_boundary {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>, %m: tensor<4x5xf32>) -> tensor<1x3x4x5xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
    %d = "convc.dot_general"(%c, %m) {lhs_contracting_dimensions = array<i64: 3>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<1x3x4x4xf32>, tensor<4x5xf32>) -> tensor<1x3x4x5xf32>
    %r = "convc.relu"(%d) : (tensor<1x3x4x5xf32>) -> tensor<1x3x4x5xf32>
    func.return %r : tensor<1x3x4x5xf32>
  }
}

// -----

// A global pool sums the spatial dims (1, 2 in NHWC); the kept [N, C] dims are in the
// written order either way, so no transpose follows.
// CHECK-LABEL: module @global_pool
// CHECK: %[[C:.*]] = "convc.conv"
// CHECK-NEXT: %s = "convc.reduce_sum"(%[[C]]) {axes = array<i64: 1, 2>} : (tensor<2x4x4x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT: func.return %s
module @global_pool {
  func.func @main(%x: tensor<2x3x4x4xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<2x5xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x3x4x4xf32>, tensor<5x3x3x3xf32>) -> tensor<2x5x4x4xf32>
    %s = "convc.reduce_sum"(%c) {axes = array<i64: 2, 3>} : (tensor<2x5x4x4xf32>) -> tensor<2x5xf32>
    func.return %s : tensor<2x5xf32>
  }
}

// -----

// A conv already channels-last is left as it is.
// CHECK-LABEL: module @nhwc_untouched
// CHECK-NOT: "convc.transpose"
// CHECK: %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// CHECK-NOT: "convc.transpose"
// CHECK: func.return %r
module @nhwc_untouched {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x4x4x3xf32>
    %r = "convc.relu"(%c) : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
    func.return %r : tensor<1x4x4x3xf32>
  }
}

// -----

// A transpose to NHWC after a conv (an exporter's Transpose) cancels against the
// conv's transpose back: the conv's NHWC result is the output, under the output's name.
// CHECK-LABEL: module @transpose_absorbed
// CHECK: %[[IN:.*]] = "convc.transpose"(%x)
// CHECK-NEXT: %t = "convc.conv"(%[[IN]], %w)
// CHECK-SAME: -> tensor<1x4x4x3xf32>
// CHECK-NEXT: func.return %t
module @transpose_absorbed {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>) -> tensor<1x4x4x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
    %t = "convc.transpose"(%c) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x4xf32>) -> tensor<1x4x4x3xf32>
    func.return %t : tensor<1x4x4x3xf32>
  }
}

// -----

// What lower-quantized leaves of a quantize and a dequantize between two convs (the scale,
// round_nearest_even, the i8 convert, a bitcast_convert to the stored type and back)
// computes NHWC as well: no transpose between the convs.
// CHECK-LABEL: module @quantize_between_convs
// CHECK: %[[C1:.*]] = "convc.conv"
// CHECK-NOT: "convc.transpose"
// CHECK: %[[ROUND:.*]] = "convc.round_nearest_even"({{.*}}) : (tensor<1x5x5x4xf32>)
// CHECK: %[[Q:.*]] = "convc.convert"(%[[ROUND]]) {new_dtype = i8} : (tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xi8>
// CHECK: %[[BITS:.*]] = "convc.bitcast_convert"(%[[Q]]) {new_dtype = ui8} : (tensor<1x5x5x4xi8>)
// CHECK: %[[BACK:.*]] = "convc.bitcast_convert"(%[[BITS]]) {new_dtype = i8}
// CHECK: %[[WIDE:.*]] = "convc.convert"(%[[BACK]]) {new_dtype = f32}
// CHECK: "convc.conv"(%[[WIDE]]
// CHECK-SAME: -> tensor<1x5x5x4xf32>
// CHECK-NEXT: %c2 = "convc.transpose"
// CHECK-NEXT: func.return %c2
module @quantize_between_convs {
  func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32> {
    %c1 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32>
    %round = "convc.round_nearest_even"(%c1) : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
    %q = "convc.convert"(%round) {new_dtype = i8} : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xi8>
    %bits = "convc.bitcast_convert"(%q) {new_dtype = ui8} : (tensor<1x4x5x5xi8>) -> tensor<1x4x5x5xui8>
    %back = "convc.bitcast_convert"(%bits) {new_dtype = i8} : (tensor<1x4x5x5xui8>) -> tensor<1x4x5x5xi8>
    %wide = "convc.convert"(%back) {new_dtype = f32} : (tensor<1x4x5x5xi8>) -> tensor<1x4x5x5xf32>
    %c2 = "convc.conv"(%wide, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32>
    func.return %c2 : tensor<1x4x5x5xf32>
  }
}
