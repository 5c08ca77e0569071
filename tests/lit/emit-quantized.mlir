// RUN: convc-opt %s --split-input-file -p canonicalize-dimension-numbers,resolve-padding --emit=stablehlo | filecheck %s

// The quantized ops emit as StableHLO's own, types unchanged (what --target generic
// writes; convc-opt --emit=stablehlo runs MLIR's verifier, quant dialect included, on it).

// CHECK-LABEL: module @quantize_conv_dequantize
// CHECK: func.func public @main(%x: tensor<1x2x5x5xf32> loc("x"), %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:-2,5.000000e-02}>> loc("w"))
// CHECK: %[[XQ:[^ ]+]] = stablehlo.uniform_quantize %x : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5x!quant.uniform<i8:f32, 5.000000e-01:-3>> loc("xq")
// CHECK-NEXT: %[[C:[^ ]+]] = stablehlo.convolution(%[[XQ]], %w)
// CHECK-SAME: : (tensor<1x2x5x5x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:-2,5.000000e-02}>>) -> tensor<1x3x3x3x!quant.uniform<i8:f32, 2.500000e-01:4>> loc("c")
// CHECK-NEXT: %[[Y:[^ ]+]] = stablehlo.uniform_dequantize %[[C]] : (tensor<1x3x3x3x!quant.uniform<i8:f32, 2.500000e-01:4>>) -> tensor<1x3x3x3xf32> loc("y")
// CHECK-NEXT: return %[[Y]]
module @quantize_conv_dequantize {
  func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>>) -> tensor<1x3x3x3xf32> {
    %xq = "convc.uniform_quantize"(%x) {new_dtype = "!quant.uniform<i8:f32, 0.5:-3>"} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>
    %c = "convc.conv"(%xq, %w) {padding = dense<0> : tensor<2x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 0.25:4>"} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>>) -> tensor<1x3x3x3x!quant.uniform<i8:f32, 0.25:4>>
    %y = "convc.uniform_dequantize"(%c) : (tensor<1x3x3x3x!quant.uniform<i8:f32, 0.25:4>>) -> tensor<1x3x3x3xf32>
    func.return %y : tensor<1x3x3x3xf32>
  }
}

// -----

// The hybrid (weight-only) conv: a float lhs, a quantized rhs, a float result.
// CHECK-LABEL: module @hybrid
// CHECK: stablehlo.convolution(%x, %w)
// CHECK-SAME: : (tensor<1x2x4x4xf32>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {1.000000e-01,2.000000e-01,3.000000e-01}>>) -> tensor<1x3x2x2xf32>
module @hybrid {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>) -> tensor<1x3x2x2xf32> {
    %c = "convc.conv"(%x, %w) {padding = dense<0> : tensor<2x2xi64>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>>) -> tensor<1x3x2x2xf32>
    func.return %c : tensor<1x3x2x2xf32>
  }
}

// -----

// bitcast_convert between a quantized type and its storage: StableHLO's own op, both ways.
// CHECK-LABEL: module @bitcast_stored_integers
// CHECK: %[[S:[^ ]+]] = stablehlo.bitcast_convert %x : (tensor<4x!quant.uniform<i32:f32, 5.000000e-01>>) -> tensor<4xi32> loc("s")
// CHECK-NEXT: %[[Q:[^ ]+]] = stablehlo.bitcast_convert %[[S]] : (tensor<4xi32>) -> tensor<4x!quant.uniform<i32:f32, 2.500000e-01>> loc("q")
module @bitcast_stored_integers {
  func.func @main(%x: tensor<4x!quant.uniform<i32:f32, 0.5>>) -> tensor<4x!quant.uniform<i32:f32, 0.25>> {
    %s = "convc.bitcast_convert"(%x) {new_dtype = i32} : (tensor<4x!quant.uniform<i32:f32, 0.5>>) -> tensor<4xi32>
    %q = "convc.bitcast_convert"(%s) {new_dtype = "!quant.uniform<i32:f32, 0.25>"} : (tensor<4xi32>) -> tensor<4x!quant.uniform<i32:f32, 0.25>>
    func.return %q : tensor<4x!quant.uniform<i32:f32, 0.25>>
  }
}
