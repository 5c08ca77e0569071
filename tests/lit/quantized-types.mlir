// RUN: convc-opt %s --split-input-file | convc-opt - --split-input-file | filecheck %s
// RUN: convc-opt %s --split-input-file -o %t.once
// RUN: convc-opt %t.once --split-input-file -o %t.twice
// RUN: diff %t.once %t.twice

// Quantized element types read as StableHLO spells them and print in one canonical
// spelling (scales as MLIR prints them, a zero zero point left out, no spaces inside
// per-axis braces), which reads back to the same type.

// CHECK-LABEL: module @per_tensor
// CHECK: func.func @main(%x: tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, %y: tensor<4x!quant.uniform<u8:f32, 2.500000e-01>>)
// CHECK-SAME: -> (tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<4x!quant.uniform<u8:f32, 2.500000e-01>>)
module @per_tensor {
  func.func @main(%x: tensor<2x3x!quant.uniform<i8:f32, 0.5:-3>>, %y: tensor<4x!quant.uniform<u8:f32, 0.25:0>>) -> (tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<4x!quant.uniform<u8:f32, 2.500000e-01>>) {
    func.return %x, %y : tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<4x!quant.uniform<u8:f32, 2.500000e-01>>
  }
}

// -----

// CHECK-LABEL: module @per_axis
// CHECK: func.func @main(%w: tensor<2x3x!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:2}>>)
// CHECK-SAME: -> tensor<2x3x!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:2}>>
module @per_axis {
  func.func @main(%w: tensor<2x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:2}>>) -> tensor<2x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:2}>> {
    func.return %w : tensor<2x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:2}>>
  }
}

// -----

// Storage limits, i16 and i32 storage, a scale %e cannot hold (printed in full).
// CHECK-LABEL: module @storage_forms
// CHECK: %a: tensor<4x!quant.uniform<i8<-127:127>:f32, 1.000000e+00>>
// CHECK-SAME: %b: tensor<4x!quant.uniform<i16:f32, 1.000000e-03:-32768>>
// CHECK-SAME: %c: tensor<4x!quant.uniform<i32:f32, 0.00392156862745098>>
// CHECK-SAME: %d: tensor<4xi16>, %e: tensor<4xi64>, %f: tensor<4xui8>
module @storage_forms {
  func.func @main(%a: tensor<4x!quant.uniform<i8<-127:127>:f32, 1.0>>, %b: tensor<4x!quant.uniform<i16:f32, 1.0e-3:-32768>>, %c: tensor<4x!quant.uniform<i32:f32, 0.00392156862745098>>, %d: tensor<4xi16>, %e: tensor<4xi64>, %f: tensor<4xui8>) -> tensor<4xi16> {
    func.return %d : tensor<4xi16>
  }
}

// -----

// Quantized element types as attribute values (uniform_quantize's new_dtype, a quantized
// conv's preferred_element_type) print quoted and canonical, and read back the same.
// CHECK-LABEL: module @quantized_attributes
// CHECK: "convc.uniform_quantize"(%x) {new_dtype = "!quant.uniform<i8:f32, 5.000000e-01:-3>"}
// CHECK: "convc.conv"
// CHECK-SAME: preferred_element_type = "!quant.uniform<i8:f32, 2.500000e-01:4>"
// CHECK: "convc.uniform_dequantize"
module @quantized_attributes {
  func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>>) -> tensor<1x3x3x3xf32> {
    %xq = "convc.uniform_quantize"(%x) {new_dtype = "!quant.uniform<i8:f32, 0.5:-3>"} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>
    %c = "convc.conv"(%xq, %w) {preferred_element_type = "!quant.uniform<i8:f32, 0.25:4>"} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>>) -> tensor<1x3x3x3x!quant.uniform<i8:f32, 0.25:4>>
    %y = "convc.uniform_dequantize"(%c) : (tensor<1x3x3x3x!quant.uniform<i8:f32, 0.25:4>>) -> tensor<1x3x3x3xf32>
    func.return %y : tensor<1x3x3x3xf32>
  }
}
