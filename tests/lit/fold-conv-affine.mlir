// RUN: convc-opt %s --split-input-file -p fold-conv-affine,dce | filecheck %s

// fold-conv-affine moves a per-output-channel scale after a conv with a constant kernel
// into the kernel (and the conv's bias), and merges a bias added after a bias into it:
// imported BatchNormalization (multiply by a broadcast scale, bias_add of a shift) leaves
// a conv with a scaled kernel and one bias_add. New values in f64, rounded once.

// BatchNormalization after a bias-free NCHW conv: kernel [1, 2] (one per output channel)
// times scale [3, 5]; the shift stays as the conv's bias.
// CHECK-LABEL: module @bn_after_conv
// CHECK: %[[W:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[\[}}3.0]]], {{\[\[\[}}10.0]]]]> : tensor<2x1x1x1xf32>}
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %[[W]])
// CHECK-SAME: -> tensor<1x2x3x3xf32>
// CHECK-NOT: "convc.multiply"
// CHECK: %[[B:[^ ]+]] = "convc.bias_add"(%[[C]], %{{[^)]+}}) {axis = 1 : i64}
// CHECK-NEXT: func.return %[[B]]
module @bn_after_conv {
  func.func @main(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %w = "convc.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %scale = "convc.constant"() {value = dense<[3.0, 5.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 2, 3, 3>} : (tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %shift = "convc.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %y = "convc.bias_add"(%m, %shift) {axis = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
    func.return %y : tensor<1x2x3x3xf32>
  }
}

// -----

// A conv with a bias, then BatchNormalization, NHWC/HWIO, the scale first in the multiply:
// bias [1, 1] * scale [2, 4] + shift [0.5, 0.25] = [2.5, 4.25], one bias_add.
// CHECK-LABEL: module @bias_then_bn_nhwc
// CHECK: %[[W:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[\[}}2.0, 8.0]]]]> : tensor<1x1x1x2xf64>}
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %[[W]])
// CHECK: %[[K:[^ ]+]] = "convc.constant"() {value = dense<[2.5, 4.25]> : tensor<2xf64>}
// CHECK-NEXT: %[[B:[^ ]+]] = "convc.bias_add"(%[[C]], %[[K]]) {axis = 3 : i64}
// CHECK-NEXT: func.return %[[B]]
module @bias_then_bn_nhwc {
  func.func @main(%x: tensor<1x3x3x1xf64>) -> tensor<1x3x3x2xf64> {
    %w = "convc.constant"() {value = dense<[[[[1.0, 2.0]]]]> : tensor<1x1x1x2xf64>} : () -> tensor<1x1x1x2xf64>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>} : (tensor<1x3x3x1xf64>, tensor<1x1x1x2xf64>) -> tensor<1x3x3x2xf64>
    %b = "convc.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf64>} : () -> tensor<2xf64>
    %cb = "convc.bias_add"(%c, %b) {axis = 3 : i64} : (tensor<1x3x3x2xf64>, tensor<2xf64>) -> tensor<1x3x3x2xf64>
    %scale = "convc.constant"() {value = dense<[2.0, 4.0]> : tensor<2xf64>} : () -> tensor<2xf64>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 3>, shape = array<i64: 1, 3, 3, 2>} : (tensor<2xf64>) -> tensor<1x3x3x2xf64>
    %m = "convc.multiply"(%spread, %cb) : (tensor<1x3x3x2xf64>, tensor<1x3x3x2xf64>) -> tensor<1x3x3x2xf64>
    %shift = "convc.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf64>} : () -> tensor<2xf64>
    %y = "convc.bias_add"(%m, %shift) {axis = 3 : i64} : (tensor<1x3x3x2xf64>, tensor<2xf64>) -> tensor<1x3x3x2xf64>
    func.return %y : tensor<1x3x3x2xf64>
  }
}

// -----

// The shift as an `add` of a [1, C, 1, 1] constant broadcast to the output (ONNX's Add of a
// per-channel parameter) merges into the conv's bias too: [1, 2] + [10, 20].
// CHECK-LABEL: module @added_shift
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK: %[[K:[^ ]+]] = "convc.constant"() {value = dense<[11.0, 22.0]> : tensor<2xf32>}
// CHECK-NEXT: %[[B:[^ ]+]] = "convc.bias_add"(%[[C]], %[[K]]) {axis = 1 : i64}
// CHECK-NEXT: func.return %[[B]]
module @added_shift {
  func.func @main(%x: tensor<1x1x3x3xf32>, %w: tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %b = "convc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %cb = "convc.bias_add"(%c, %b) {axis = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %s = "convc.constant"() {value = dense<[[[[10.0]], [[20.0]]]]> : tensor<1x2x1x1xf32>} : () -> tensor<1x2x1x1xf32>
    %spread = "convc.broadcast_in_dim"(%s) {broadcast_dimensions = array<i64: 0, 1, 2, 3>, shape = array<i64: 1, 2, 3, 3>} : (tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    %y = "convc.add"(%spread, %cb) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %y : tensor<1x2x3x3xf32>
  }
}

// -----

// Not folded: the kernel is a graph input (weights kept as inputs, or a gradient's wrt).
// CHECK-LABEL: module @kernel_is_input
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK: "convc.multiply"(%[[C]],
module @kernel_is_input {
  func.func @main(%x: tensor<1x1x3x3xf32>, %w: tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %scale = "convc.constant"() {value = dense<[3.0, 5.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 2, 3, 3>} : (tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %m : tensor<1x2x3x3xf32>
  }
}

// -----

// Not folded: the scale is not a constant.
// CHECK-LABEL: module @scale_is_input
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK: "convc.multiply"(%[[C]],
module @scale_is_input {
  func.func @main(%x: tensor<1x1x3x3xf32>, %scale: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
    %w = "convc.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 2, 3, 3>} : (tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %m : tensor<1x2x3x3xf32>
  }
}

// -----

// Not folded: the scale varies along a spatial dim (broadcast along dim 2), not per channel.
// CHECK-LABEL: module @scale_per_row
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK: "convc.multiply"(%[[C]],
module @scale_per_row {
  func.func @main(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %w = "convc.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %scale = "convc.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 2>, shape = array<i64: 1, 2, 3, 3>} : (tensor<3xf32>) -> tensor<1x2x3x3xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %m : tensor<1x2x3x3xf32>
  }
}

// -----

// Not folded: the conv's result is also a result of the function (it would be computed twice).
// CHECK-LABEL: module @conv_used_twice
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK: %[[M:[^ ]+]] = "convc.multiply"(%[[C]],
// CHECK: func.return %[[M]], %[[C]]
module @conv_used_twice {
  func.func @main(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
    %w = "convc.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %scale = "convc.constant"() {value = dense<[3.0, 5.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 2, 3, 3>} : (tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %m, %c : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  }
}

// -----

// Not merged: the first bias_add is also a result of the function.
// CHECK-LABEL: module @bias_is_result
// CHECK: %[[CB:[^ ]+]] = "convc.bias_add"(%c, %b)
// CHECK-NEXT: %s = "convc.constant"
// CHECK-NEXT: %[[Y:[^ ]+]] = "convc.bias_add"(%[[CB]], %s)
// CHECK-NEXT: func.return %[[Y]], %[[CB]]
module @bias_is_result {
  func.func @main(%x: tensor<1x1x3x3xf32>, %w: tensor<2x1x1x1xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
    %b = "convc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %cb = "convc.bias_add"(%c, %b) {axis = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %s = "convc.constant"() {value = dense<[10.0, 20.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %y = "convc.bias_add"(%cb, %s) {axis = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
    func.return %y, %cb : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  }
}

// -----

// Not folded: an integer conv (the scale could not be exact in its kernel).
// CHECK-NOT: "convc.conv"
// CHECK-LABEL: module @integer_conv
// CHECK: %[[C:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK: "convc.multiply"(%[[C]],
module @integer_conv {
  func.func @main(%x: tensor<1x1x3x3xi32>) -> tensor<1x2x3x3xi32> {
    %w = "convc.constant"() {value = dense<[[[[1]]], [[[2]]]]> : tensor<2x1x1x1xi32>} : () -> tensor<2x1x1x1xi32>
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>} : (tensor<1x1x3x3xi32>, tensor<2x1x1x1xi32>) -> tensor<1x2x3x3xi32>
    %scale = "convc.constant"() {value = dense<[3, 5]> : tensor<2xi32>} : () -> tensor<2xi32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 2, 3, 3>} : (tensor<2xi32>) -> tensor<1x2x3x3xi32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x2x3x3xi32>, tensor<1x2x3x3xi32>) -> tensor<1x2x3x3xi32>
    func.return %m : tensor<1x2x3x3xi32>
  }
}

// -----

// A lowered transposed conv's kernel, reverse of a constant over the spatial dims and the
// out-feature dim (o is dim 3 here): the scale goes into the constant, reversed along o to
// meet the reverse, and the reverse is built again on it. [1, 2] * reversed [3, 5] = [5, 6].
// CHECK-LABEL: module @reversed_kernel
// CHECK: %[[K:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[\[}}5.0, 6.0]]]]> : tensor<1x1x1x2xf32>}
// CHECK-NEXT: %[[R:[^ ]+]] = "convc.reverse"(%[[K]]) {dimensions = array<i64: 0, 1, 3>}
// CHECK-NEXT: %[[C:[^ ]+]] = "convc.conv"(%x, %[[R]])
// CHECK-NOT: "convc.multiply"
// CHECK: func.return %[[C]]
module @reversed_kernel {
  func.func @main(%x: tensor<1x3x3x1xf32>) -> tensor<1x3x3x2xf32> {
    %w = "convc.constant"() {value = dense<[[[[1.0, 2.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
    %r = "convc.reverse"(%w) {dimensions = array<i64: 0, 1, 3>} : (tensor<1x1x1x2xf32>) -> tensor<1x1x1x2xf32>
    %c = "convc.conv"(%x, %r) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>} : (tensor<1x3x3x1xf32>, tensor<1x1x1x2xf32>) -> tensor<1x3x3x2xf32>
    %scale = "convc.constant"() {value = dense<[3.0, 5.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 3>, shape = array<i64: 1, 3, 3, 2>} : (tensor<2xf32>) -> tensor<1x3x3x2xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %m : tensor<1x3x3x2xf32>
  }
}

// -----

// A kernel transposed from its constant: the conv's o (dim 3) is the constant's dim 0.
// [[1], [2]] * [3, 5] = [[3], [10]].
// CHECK-LABEL: module @transposed_kernel
// CHECK: %[[K:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[\[}}3.0]]], {{\[\[\[}}10.0]]]]> : tensor<2x1x1x1xf32>}
// CHECK-NEXT: %[[T:[^ ]+]] = "convc.transpose"(%[[K]]) {permutation = array<i64: 1, 2, 3, 0>}
// CHECK-NEXT: "convc.conv"(%x, %[[T]])
// CHECK-NOT: "convc.multiply"
module @transposed_kernel {
  func.func @main(%x: tensor<1x3x3x1xf32>) -> tensor<1x3x3x2xf32> {
    %w = "convc.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
    %t = "convc.transpose"(%w) {permutation = array<i64: 1, 2, 3, 0>} : (tensor<2x1x1x1xf32>) -> tensor<1x1x1x2xf32>
    %c = "convc.conv"(%x, %t) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>} : (tensor<1x3x3x1xf32>, tensor<1x1x1x2xf32>) -> tensor<1x3x3x2xf32>
    %scale = "convc.constant"() {value = dense<[3.0, 5.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %spread = "convc.broadcast_in_dim"(%scale) {broadcast_dimensions = array<i64: 3>, shape = array<i64: 1, 3, 3, 2>} : (tensor<2xf32>) -> tensor<1x3x3x2xf32>
    %m = "convc.multiply"(%c, %spread) : (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
    func.return %m : tensor<1x3x3x2xf32>
  }
}
