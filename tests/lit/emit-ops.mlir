// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// One case per plain op's emitter rule, in StableHLO's pretty syntax. Every op keeps
// its node name as loc("..."); helper values an op needs get names derived from it.

// constant: small values inline, a splat as one value.
// CHECK-LABEL: module @constant
// CHECK: %[[K:[^ ]+]] = stablehlo.constant dense<[1.0, -2.5, 3.0]> : tensor<3xf32> loc("k")
// CHECK-NEXT: %[[S:[^ ]+]] = stablehlo.constant dense<7> : tensor<2x2xi32> loc("s")
// CHECK-NEXT: return %[[K]], %[[S]] : tensor<3xf32>, tensor<2x2xi32>
module @constant {
  func.func @main() -> (tensor<3xf32>, tensor<2x2xi32>) {
    %k = "convc.constant"() {value = dense<[1.0, -2.5, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %s = "convc.constant"() {value = dense<7> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
    func.return %k, %s : tensor<3xf32>, tensor<2x2xi32>
  }
}

// -----

// add and multiply: elementwise ops on one type.
// CHECK-LABEL: module @add_multiply
// CHECK: func.func public @main(%[[A:[^:]+]]: tensor<2x3xf32> loc("a"), %[[B:[^:]+]]: tensor<2x3xf32> loc("b"))
// CHECK-NEXT: %[[SUM:[^ ]+]] = stablehlo.add %[[A]], %[[B]] : tensor<2x3xf32> loc("sum")
// CHECK-NEXT: %[[PROD:[^ ]+]] = stablehlo.multiply %[[SUM]], %[[B]] : tensor<2x3xf32> loc("prod")
// CHECK-NEXT: return %[[PROD]]
module @add_multiply {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %sum = "convc.add"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %prod = "convc.multiply"(%sum, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %prod : tensor<2x3xf32>
  }
}

// -----

// bias_add: the bias is broadcast along `axis` (here the NCHW channel, 1), then added.
// CHECK-LABEL: module @bias_add
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<1x3x2x2xf32> loc("x"), %[[BIAS:[^:]+]]: tensor<3xf32> loc("bias"))
// CHECK-NEXT: %[[WIDE:[^ ]+]] = stablehlo.broadcast_in_dim %[[BIAS]], dims = [1] : (tensor<3xf32>) -> tensor<1x3x2x2xf32> loc("y")
// CHECK-NEXT: %[[Y:[^ ]+]] = stablehlo.add %[[X]], %[[WIDE]] : tensor<1x3x2x2xf32> loc("y")
// CHECK-NEXT: return %[[Y]]
module @bias_add {
  func.func @main(%x: tensor<1x3x2x2xf32>, %bias: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
    %y = "convc.bias_add"(%x, %bias) {axis = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
    func.return %y : tensor<1x3x2x2xf32>
  }
}

// -----

// bias_add's default axis is the last one (-1).
// CHECK-LABEL: module @bias_add_default_axis
// CHECK: stablehlo.broadcast_in_dim %{{[^,]+}}, dims = [3] : (tensor<2xf32>) -> tensor<1x3x3x2xf32>
module @bias_add_default_axis {
  func.func @main(%x: tensor<1x3x3x2xf32>, %bias: tensor<2xf32>) -> tensor<1x3x3x2xf32> {
    %y = "convc.bias_add"(%x, %bias) : (tensor<1x3x3x2xf32>, tensor<2xf32>) -> tensor<1x3x3x2xf32>
    func.return %y : tensor<1x3x3x2xf32>
  }
}

// -----

// relu: maximum with a broadcast zero of the operand's element type.
// CHECK-LABEL: module @relu
// CHECK: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f16> loc("r")
// CHECK-NEXT: %[[ZEROS:[^ ]+]] = stablehlo.broadcast_in_dim %[[ZERO]], dims = [] : (tensor<f16>) -> tensor<4x5xf16> loc("r")
// CHECK-NEXT: %[[R:[^ ]+]] = stablehlo.maximum %{{[^,]+}}, %[[ZEROS]] : tensor<4x5xf16> loc("r")
module @relu {
  func.func @main(%x: tensor<4x5xf16>) -> tensor<4x5xf16> {
    %r = "convc.relu"(%x) : (tensor<4x5xf16>) -> tensor<4x5xf16>
    func.return %r : tensor<4x5xf16>
  }
}

// -----

// relu_grad: out_grad where x > 0 (a compare against a broadcast zero), else that zero.
// CHECK-LABEL: module @relu_grad
// CHECK: %[[ZERO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32> loc("r")
// CHECK-NEXT: %[[ZEROS:[^ ]+]] = stablehlo.broadcast_in_dim %[[ZERO]], dims = [] : (tensor<f32>) -> tensor<4x5xf32> loc("r")
// CHECK-NEXT: %[[POS:[^ ]+]] = stablehlo.compare GT, %x, %[[ZEROS]], FLOAT : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1> loc("r")
// CHECK-NEXT: %r = stablehlo.select %[[POS]], %g, %[[ZEROS]] : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32> loc("r")
module @relu_grad {
  func.func @main(%g: tensor<4x5xf32>, %x: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %r = "convc.relu_grad"(%g, %x) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    func.return %r : tensor<4x5xf32>
  }
}

// -----

// reshape.
// CHECK-LABEL: module @reshape
// CHECK: stablehlo.reshape %{{[^ ]+}} : (tensor<2x3x4xf32>) -> tensor<6x4xf32> loc("r")
module @reshape {
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
    %r = "convc.reshape"(%x) {new_sizes = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    func.return %r : tensor<6x4xf32>
  }
}

// -----

// transpose: `permutation` becomes dims.
// CHECK-LABEL: module @transpose
// CHECK: stablehlo.transpose %{{[^,]+}}, dims = [0, 3, 1, 2] : (tensor<1x5x6x3xf32>) -> tensor<1x3x5x6xf32> loc("t")
module @transpose {
  func.func @main(%x: tensor<1x5x6x3xf32>) -> tensor<1x3x5x6xf32> {
    %t = "convc.transpose"(%x) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x3xf32>) -> tensor<1x3x5x6xf32>
    func.return %t : tensor<1x3x5x6xf32>
  }
}

// -----

// reverse: `dimensions` becomes dims.
// CHECK-LABEL: module @reverse
// CHECK: stablehlo.reverse %{{[^,]+}}, dims = [2, 3] : tensor<4x2x3x3xf32> loc("flipped")
module @reverse {
  func.func @main(%w: tensor<4x2x3x3xf32>) -> tensor<4x2x3x3xf32> {
    %flipped = "convc.reverse"(%w) {dimensions = array<i64: 2, 3>} : (tensor<4x2x3x3xf32>) -> tensor<4x2x3x3xf32>
    func.return %flipped : tensor<4x2x3x3xf32>
  }
}

// -----

// pad: the padding value becomes a scalar constant; lo/hi/interior columns become
// low/high/interior (negative lo/hi crop).
// CHECK-LABEL: module @pad
// CHECK: %[[FILL:[^ ]+]] = stablehlo.constant dense<2.5> : tensor<f32> loc("p")
// CHECK-NEXT: stablehlo.pad %{{[^,]+}}, %[[FILL]], low = [1, 0], high = [-1, 2], interior = [1, 0]
// CHECK-SAME: : (tensor<6x4xf32>, tensor<f32>) -> tensor<11x6xf32> loc("p")
module @pad {
  func.func @main(%x: tensor<6x4xf32>) -> tensor<11x6xf32> {
    %p = "convc.pad"(%x) {padding_config = dense<[[1, -1, 1], [0, 2, 0]]> : tensor<2x3xi64>, padding_value = 2.5 : f64} : (tensor<6x4xf32>) -> tensor<11x6xf32>
    func.return %p : tensor<11x6xf32>
  }
}

// -----

// slice: start:limit per dim, with :stride only where the stride is not 1.
// CHECK-LABEL: module @slice
// CHECK: stablehlo.slice %{{[^ ]+}} [1:10:3, 0:4] : (tensor<11x4xf32>) -> tensor<3x4xf32> loc("s")
// CHECK-NEXT: stablehlo.slice %{{[^ ]+}} [0:2, 1:3] : (tensor<11x4xf32>) -> tensor<2x2xf32> loc("u")
module @slice {
  func.func @main(%x: tensor<11x4xf32>) -> (tensor<3x4xf32>, tensor<2x2xf32>) {
    %s = "convc.slice"(%x) {start_indices = array<i64: 1, 0>, limit_indices = array<i64: 10, 4>, strides = array<i64: 3, 1>} : (tensor<11x4xf32>) -> tensor<3x4xf32>
    %u = "convc.slice"(%x) {start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>} : (tensor<11x4xf32>) -> tensor<2x2xf32>
    func.return %s, %u : tensor<3x4xf32>, tensor<2x2xf32>
  }
}

// -----

// concatenate: variadic operands, `dimension` becomes dim.
// CHECK-LABEL: module @concatenate
// CHECK: func.func public @main(%[[A:[^:]+]]: tensor<2x3xf32> loc("a"), %[[B:[^:]+]]: tensor<2x1xf32> loc("b"))
// CHECK-NEXT: stablehlo.concatenate %[[A]], %[[B]], %[[A]], dim = 1 : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32> loc("c")
module @concatenate {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x7xf32> {
    %c = "convc.concatenate"(%a, %b, %a) {dimension = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
    func.return %c : tensor<2x7xf32>
  }
}

// -----

// convert: only the element type changes.
// CHECK-LABEL: module @convert
// CHECK: stablehlo.convert %{{[^ ]+}} : (tensor<2x2xf32>) -> tensor<2x2xbf16> loc("h")
module @convert {
  func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xbf16> {
    %h = "convc.convert"(%x) {new_dtype = bf16} : (tensor<2x2xf32>) -> tensor<2x2xbf16>
    func.return %h : tensor<2x2xbf16>
  }
}

// -----

// reduce_sum: a stablehlo.reduce with an add body and a zero init.
// CHECK-LABEL: module @reduce_sum
// CHECK: %[[Z:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32> loc("s")
// CHECK-NEXT: %s = stablehlo.reduce(%{{[^ ]+}} init: %[[Z]]) applies stablehlo.add across dimensions = [0, 2]
// CHECK-SAME: : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<3xf32> loc("s")
module @reduce_sum {
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
    %s = "convc.reduce_sum"(%x) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
    func.return %s : tensor<3xf32>
  }
}

// -----

// stacked_reduce_sum: one variadic stablehlo.reduce (generic syntax; one add per input,
// block arguments accumulators first), its results reshaped to rows and concatenated.
// Region names are fresh: an input named like a block argument (%acc) keeps its name.
// CHECK-LABEL: module @stacked_reduce_sum
// CHECK: %[[Z:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32> loc("s")
// CHECK-NEXT: %[[R:[^:]+]]:2 = "stablehlo.reduce"(%acc, %b, %[[Z]], %[[Z]]) ({
// CHECK-NEXT: ^bb0(%[[A0:[^:]+]]: tensor<f32>, %[[A1:[^:]+]]: tensor<f32>, %[[V0:[^:]+]]: tensor<f32>, %[[V1:[^:]+]]: tensor<f32>):
// CHECK-NEXT: %[[T0:[^ ]+]] = stablehlo.add %[[A0]], %[[V0]] : tensor<f32>
// CHECK-NEXT: %[[T1:[^ ]+]] = stablehlo.add %[[A1]], %[[V1]] : tensor<f32>
// CHECK-NEXT: stablehlo.return %[[T0]], %[[T1]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: }) {dimensions = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>) loc("s")
// CHECK-NEXT: %[[R0:[^ ]+]] = stablehlo.reshape %[[R]]#0 : (tensor<3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[R1:[^ ]+]] = stablehlo.reshape %[[R]]#1 : (tensor<3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %s = stablehlo.concatenate %[[R0]], %[[R1]], dim = 0 : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32> loc("s")
module @stacked_reduce_sum {
  func.func @main(%acc: tensor<2x3x4xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
    %s = "convc.stacked_reduce_sum"(%acc, %b) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3xf32>
    func.return %s : tensor<2x3xf32>
  }
}

// -----

// A name MLIR cannot take as an SSA id gets a safe one; loc() and the result info keep the original.
// CHECK-LABEL: module @names
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<2xf32> loc("x")) -> (tensor<2xf32> {jax.result_info = "my node/1"})
// CHECK-NEXT: %[[V:[^ ]+]] = stablehlo.add %[[X]], %[[X]] : tensor<2xf32> loc("my node/1")
// CHECK-NEXT: return %[[V]]
module @names {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %v = "convc.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("my node/1")
    func.return %v : tensor<2xf32>
  }
}
