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
