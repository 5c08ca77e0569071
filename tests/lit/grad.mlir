// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w}" 2>/dev/null | filecheck %s
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w},infer-shapes,lower-conv-transpose,lower-conv-backprop-input,lower-conv-backprop-filter,canonicalize-dimension-numbers,resolve-padding,dce" 2>/dev/null | filecheck %s --check-prefix=LOWERED
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w}" 2>&1 >/dev/null | filecheck %s --check-prefix=ERR
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,x}" 2>&1 >/dev/null | filecheck %s --check-prefix=TWICE
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x:w}" 2>&1 >/dev/null | filecheck %s --check-prefix=COLON
// RUN: not convc-opt %s --split-input-file -p "grad{wrt=x,w}" --print-ir-after-all -o %t 2>&1 | filecheck %s --check-prefix=DUMP

// grad{wrt=x,w} makes the model its gradient step (convc.grad, compiler/autodiff.py): the inputs
// gain one cotangent per output (`<output>.grad`), the outputs the gradient of each wrt value
// (`<name>.grad`), built by each op's declared gradient rule. The last chunks are the
// diagnostics G1..G6 (the `not` above: they fail on purpose).

// A conv's gradients are its two gradient ops with the forward conv's attributes, the padding
// resolved to explicit pairs, and the primal shapes (`input_shape`, `kernel_shape`).
// CHECK-LABEL: module @conv
// CHECK: func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %y.grad: tensor<2x4x4x4xf32>)
// CHECK-SAME: -> (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>)
// CHECK: %[[Y:.*]] = "convc.conv"(%x, %w)
// CHECK-NEXT: %x.grad = "convc.conv_backprop_input"(%y.grad, %w)
// CHECK-SAME: input_shape = array<i64: 2, 3, 8, 8>
// CHECK-SAME: lhs_dilation = array<i64: 1, 1>
// CHECK-SAME: padding = dense<{{\[\[}}0, 1], [1, 2]]>
// CHECK-SAME: rhs_dilation = array<i64: 1, 2>
// CHECK-SAME: window_strides = array<i64: 2, 2>
// CHECK-SAME: -> tensor<2x3x8x8xf32>
// CHECK-NEXT: %w.grad = "convc.conv_backprop_filter"(%x, %y.grad)
// CHECK-SAME: kernel_shape = array<i64: 4, 3, 3, 3>
// CHECK-SAME: padding = dense<{{\[\[}}0, 1], [1, 2]]>
// CHECK-SAME: rhs_dilation = array<i64: 1, 2>
// CHECK-SAME: window_strides = array<i64: 2, 2>
// CHECK-SAME: -> tensor<4x3x3x3xf32>
// CHECK-NEXT: func.return %[[Y]], %x.grad, %w.grad
// --print-ir-after-all shows the pass that built the gradient step, with its option.
// (The dashes as a regex: written out after `//`, they would split the file here.)
// DUMP: {{^}}// {{-+}}// IR Dump After grad{wrt=x,w} //{{-+}} //{{$}}
// DUMP-NEXT: {{^}}module @conv {
// DUMP-NEXT: func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %y.grad: tensor<2x4x4x4xf32>)
// DUMP: %x.grad = "convc.conv_backprop_input"
module @conv {
  func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32> {
    %y = "convc.conv"(%x, %w) {padding = "SAME", window_strides = array<i64: 2, 2>, rhs_dilation = array<i64: 1, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    func.return %y : tensor<2x4x4x4xf32>
  }
}

// -----

// A grouped conv (G = 2): both gradient ops keep feature_group_count = 2; lowered on the
// generic target, the input gradient is a feature-grouped conv over the reversed, regrouped
// kernel and the kernel gradient a batch-grouped conv.
// CHECK-LABEL: module @grouped
// CHECK: %x.grad = "convc.conv_backprop_input"(%y.grad, %w)
// CHECK-SAME: feature_group_count = 2 : i64
// CHECK: %w.grad = "convc.conv_backprop_filter"(%x, %y.grad)
// CHECK-SAME: feature_group_count = 2 : i64
// LOWERED-LABEL: module @grouped
// LOWERED: %[[REV:.*]] = "convc.reverse"(%w) {dimensions = array<i64: 2, 3>}
// LOWERED: %[[K:.*]] = "convc.reshape"({{.*}}) {new_sizes = array<i64: 2, 6, 3, 3>}
// LOWERED-NEXT: %x.grad = "convc.conv"(%y.grad, %[[K]])
// LOWERED-SAME: feature_group_count = 2 : i64
// LOWERED-SAME: padding = dense<{{\[\[}}2, 2], [2, 2]]>
// LOWERED-NEXT: %w.grad = "convc.conv"(%x, %y.grad)
// LOWERED-SAME: batch_group_count = 2 : i64
// LOWERED-SAME: dimension_numbers = #convc.dims<[f, b, 0, 1]x[i, o, 0, 1]->[f, b, 0, 1]>
// LOWERED-SAME: -> tensor<4x3x3x3xf32>
// LOWERED-NOT: convc.conv_backprop
module @grouped {
  func.func @main(%x: tensor<2x6x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32> {
    %y = "convc.conv"(%x, %w) {feature_group_count = 2 : i64} : (tensor<2x6x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32>
    func.return %y : tensor<2x4x3x3xf32>
  }
}

// -----

// A transposed conv is an lhs-dilated conv (its plan): its gradients are that conv's, so
// lhs_dilation = 2 and the plan's pads; lowered, the input gradient is a strided conv.
// CHECK-LABEL: module @transposed
// CHECK: %x.grad = "convc.conv_backprop_input"(%y.grad, %w)
// CHECK-SAME: input_shape = array<i64: 1, 4, 4, 3>
// CHECK-SAME: lhs_dilation = array<i64: 2, 2>
// CHECK-SAME: padding = dense<{{\[\[}}2, 1], [2, 1]]>
// CHECK-SAME: window_strides = array<i64: 1, 1>
// CHECK: %w.grad = "convc.conv_backprop_filter"(%x, %y.grad)
// CHECK-SAME: kernel_shape = array<i64: 3, 3, 3, 2>
// CHECK-SAME: lhs_dilation = array<i64: 2, 2>
// LOWERED-LABEL: module @transposed
// LOWERED: %x.grad = "convc.conv"(%y.grad,
// LOWERED-SAME: lhs_dilation = array<i64: 1, 1>
// LOWERED-SAME: window_strides = array<i64: 2, 2>
// LOWERED-SAME: -> tensor<1x4x4x3xf32>
module @transposed {
  func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<1x8x8x2xf32> {
    %y = "convc.conv_transpose"(%x, %w) {padding = "SAME", strides = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>, tensor<3x3x3x2xf32>) -> tensor<1x8x8x2xf32>
    func.return %y : tensor<1x8x8x2xf32>
  }
}

// -----

// A value used twice gets the sum of its cotangents.
// CHECK-LABEL: module @diamond
// CHECK: %[[SUM:.*]] = "convc.add"(%y.grad, %y.grad)
// CHECK-NEXT: %x.grad = "convc.multiply"(%[[SUM]], %w)
// CHECK-NEXT: %w.grad = "convc.multiply"(%x, %[[SUM]])
module @diamond {
  func.func @main(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
    %p = "convc.multiply"(%x, %w) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %y = "convc.add"(%p, %p) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %y : tensor<3xf32>
  }
}

// -----

// G1: a wrt name that is no value of the model (here `w`). Names are separated by commas,
// as in MLIR's list options: `x:w` is one name, and where its parts are values, G1 says so.
// ERR: {{^}}{{.*}}grad.mlir: error: grad: wrt names 'w', which is no value of 'G1_unknown' [G1]{{$}}
// COLON: {{^}}{{.*}}grad.mlir: error: grad: wrt names 'x:w', which is no value of 'conv'; names are separated by ',': x,w [G1]{{$}}
module @G1_unknown {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %y = "convc.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %y : tensor<2x3xf32>
  }
}

// -----

// G2: wrt names a node's result.
// ERR: {{^}}{{.*}}grad.mlir:[[# @LINE + 4]]:5: error: 'w' (relu): grad: wrt names 'w', the result of a relu node: wrt takes inputs and constants [G2]{{$}}
// TWICE: {{^}}{{.*}}grad.mlir:[[# @LINE + 2]]:19: error: grad: wrt lists 'x' twice [G4]{{$}}
module @G2_node {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %w = "convc.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %w : tensor<2x3xf32>
  }
}

// -----

// G3: an integer wrt value has no gradient.
// ERR: {{^}}{{.*}}grad.mlir:[[# @LINE + 2]]:40: error: grad: wrt names 'w' of integer type tensor<2xi32>, which has no gradient [G3]{{$}}
module @G3_integer {
  func.func @main(%x: tensor<2x3xf32>, %w: tensor<2xi32>) -> tensor<2x3xf32> {
    %y = "convc.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %y : tensor<2x3xf32>
  }
}

// -----

// G5: the gradient's name `w.grad` is taken.
// ERR: {{^}}{{.*}}grad.mlir:[[# @LINE + 3]]:5: error: 'w.grad' (add): grad: the gradient name 'w.grad' clashes with an existing value [G5]{{$}}
module @G5_clash {
  func.func @main(%x: tensor<2x3xf32>, %w: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %w.grad = "convc.add"(%x, %w) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %w.grad : tensor<2x3xf32>
  }
}

// -----

// G6: the gradient flows through an op that declares no gradient rule.
// ERR: {{^}}{{.*}}grad.mlir:[[# @LINE + 3]]:5: error: 's' (stacked_reduce_sum): grad: op 'stacked_reduce_sum' has no gradient rule, and the gradient flows through this node [G6]{{$}}
module @G6_no_rule {
  func.func @main(%x: tensor<2x3xf32>, %w: tensor<2x3xf32>) -> tensor<2x2xf32> {
    %s = "convc.stacked_reduce_sum"(%x, %w) {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
    func.return %s : tensor<2x2xf32>
  }
}
