// RUN: convc-opt %s --split-input-file -p lower-quantized | filecheck %s
// RUN: convc-opt %s --split-input-file --default-pipeline cpu --emit=stablehlo | filecheck %s --check-prefix=CPU
// RUN: convc-opt %s --split-input-file --default-pipeline gpu --emit=stablehlo | filecheck %s --check-prefix=GPU

// lower-quantized: quantized values become their stored integers (inputs and outputs too)
// and each quantized op the spec's arithmetic on them (docs/passes.md).

// A per-axis quantized conv: an i32 conv of the zero-point-shifted operands, a per-feature
// f64 rescale rounded to f32, then the spec's quantize.
// CHECK-LABEL: module @per_axis_conv
// CHECK: func.func @main(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) -> tensor<1x3x5x5xi8>
// CHECK: %[[XW:[^ ]+]] = "convc.convert"(%x) {new_dtype = i32}
// CHECK: %[[XZ:[^ ]+]] = "convc.constant"() {value = dense<-3> : tensor<i32>}
// CHECK: %[[XZB:[^ ]+]] = "convc.broadcast_in_dim"(%[[XZ]])
// CHECK: %[[XS:[^ ]+]] = "convc.subtract"(%[[XW]], %[[XZB]])
// CHECK: %[[WW:[^ ]+]] = "convc.convert"(%w) {new_dtype = i32}
// CHECK: %[[WZ:[^ ]+]] = "convc.constant"() {value = dense<[1, -2, 0]> : tensor<3xi32>}
// CHECK: %[[WZB:[^ ]+]] = "convc.broadcast_in_dim"(%[[WZ]]) {broadcast_dimensions = array<i64: 0>, shape = array<i64: 3, 2, 3, 3>}
// CHECK: %[[WS:[^ ]+]] = "convc.subtract"(%[[WW]], %[[WZB]])
// CHECK: %[[ACC:[^ ]+]] = "convc.conv"(%[[XS]], %[[WS]])
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]> : tensor<2x2xi64>
// CHECK-SAME: : (tensor<1x2x5x5xi32>, tensor<3x2x3x3xi32>) -> tensor<1x3x5x5xi32>
// CHECK: %[[ACC64:[^ ]+]] = "convc.convert"(%[[ACC]]) {new_dtype = f64}
// CHECK: %[[M:[^ ]+]] = "convc.constant"() {value = dense<[0.05000000074505806, 0.10000000149011612, 0.02500000037252903]> : tensor<3xf64>}
// CHECK: %[[MB:[^ ]+]] = "convc.broadcast_in_dim"(%[[M]]) {broadcast_dimensions = array<i64: 1>
// CHECK: %[[R64:[^ ]+]] = "convc.multiply"(%[[ACC64]], %[[MB]])
// CHECK: %[[R:[^ ]+]] = "convc.convert"(%[[R64]]) {new_dtype = f32}
// CHECK: %[[D:[^ ]+]] = "convc.divide"(%[[R]], %{{[^)]+}})
// CHECK: %[[A:[^ ]+]] = "convc.add"(%[[D]], %{{[^)]+}})
// CHECK: %[[CL:[^ ]+]] = "convc.clamp"(%[[A]]) {max = 127.0 : f64, min = -128.0 : f64}
// CHECK: %[[RN:[^ ]+]] = "convc.round_nearest_even"(%[[CL]])
// CHECK: %c = "convc.convert"(%[[RN]]) {new_dtype = i8}
// CHECK: func.return %c : tensor<1x3x5x5xi8>
module @per_axis_conv {
  func.func @main(%x: tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>>) -> tensor<1x3x5x5x!quant.uniform<i8:f32, 0.25:4>> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"], padding = dense<1> : tensor<2x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 0.25:4>"} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>>) -> tensor<1x3x5x5x!quant.uniform<i8:f32, 0.25:4>>
    func.return %c : tensor<1x3x5x5x!quant.uniform<i8:f32, 0.25:4>>
  }
}

// CPU-LABEL: module @per_axis_conv
// CPU-NOT: quant
// the integer conv, channels-last after cpu-layout-nhwc (the kernel is an input: it keeps its layout)
// CPU: stablehlo.convolution
// CPU-SAME: (tensor<1x5x5x2xi32>, tensor<3x2x3x3xi32>) -> tensor<1x5x5x3xi32>
// CPU: stablehlo.round_nearest_even

// XLA:GPU has no integer conv: the gpu pipeline's conv of the shifted operands is f64.
// GPU-LABEL: module @per_axis_conv
// GPU-NOT: quant
// GPU: stablehlo.convert %x : (tensor<1x2x5x5xi8>) -> tensor<1x2x5x5xf64>
// GPU: stablehlo.convolution
// GPU-SAME: (tensor<1x2x5x5xf64>, tensor<3x2x3x3xf64>) -> tensor<1x3x5x5xf64>
// GPU-NOT: stablehlo.convert %{{[^ ]+}} : (tensor<1x3x5x5xf64>) -> tensor<1x3x5x5xf64>
// GPU: stablehlo.multiply
// GPU-SAME: tensor<1x3x5x5xf64>

// -----

// A u8 requantization and dequantization: dequantize with the operand's type first; zero
// zero points and the u8 storage type's limits.
// CHECK-LABEL: module @requantize
// CHECK: func.func @main(%x: tensor<4xi8>) -> (tensor<4xui8>, tensor<4xf32>)
// CHECK: %[[W:[^ ]+]] = "convc.convert"(%x) {new_dtype = i32}
// CHECK-NEXT: %[[F:[^ ]+]] = "convc.convert"(%[[W]]) {new_dtype = f32}
// CHECK: %[[DQ:[^ ]+]] = "convc.multiply"(%[[F]], %{{[^)]+}})
// CHECK: "convc.divide"(%[[DQ]], %{{[^)]+}})
// CHECK: "convc.clamp"(%{{[^)]+}}) {max = 255.0 : f64, min = 0.0 : f64}
// CHECK: %q = "convc.convert"(%{{[^)]+}}) {new_dtype = ui8}
// CHECK: "convc.subtract"
// CHECK: %d = "convc.multiply"
// CHECK: func.return %q, %d : tensor<4xui8>, tensor<4xf32>
module @requantize {
  func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> (tensor<4x!quant.uniform<u8:f32, 0.25:128>>, tensor<4xf32>) {
    %q = "convc.uniform_quantize"(%x) {new_dtype = "!quant.uniform<u8:f32, 0.25:128>"} : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<u8:f32, 0.25:128>>
    %d = "convc.uniform_dequantize"(%q) : (tensor<4x!quant.uniform<u8:f32, 0.25:128>>) -> tensor<4xf32>
    func.return %q, %d : tensor<4x!quant.uniform<u8:f32, 0.25:128>>, tensor<4xf32>
  }
}

// CPU-LABEL: module @requantize
// CPU: func.func public @main(%x: tensor<4xi8> loc("x")) -> (tensor<4xui8> {jax.result_info = "q"}, tensor<4xf32> {jax.result_info = "d"})

// -----

// Quantized transposes (jax2tf's NCHW -> NHWC around a quantized conv) move stored integers;
// the per-axis kernel's quantization dimension followed its output features (0 -> 3).
// CHECK-LABEL: module @quantized_transposes
// CHECK: func.func @main(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xf32>
// CHECK: %xt = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x2x5x5xi8>) -> tensor<1x5x5x2xi8>
// CHECK: %wt = "convc.transpose"(%w) {permutation = array<i64: 2, 3, 1, 0>} : (tensor<3x2x3x3xi8>) -> tensor<3x3x2x3xi8>
// CHECK: "convc.convert"(%wt) {new_dtype = i32}
// CHECK: "convc.broadcast_in_dim"(%{{[^)]+}}) {broadcast_dimensions = array<i64: 3>, shape = array<i64: 3, 3, 2, 3>}
// CPU-LABEL: module @quantized_transposes
// CPU-NOT: quant
// CPU: stablehlo.convolution
// CPU-SAME: xi32>
module @quantized_transposes {
  func.func @main(%x: tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.25:1, 0.5, 0.125:-1}>>) -> tensor<1x3x3x3xf32> {
    %xt = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x5x5x2x!quant.uniform<i8:f32, 0.5:-3>>
    %wt = "convc.transpose"(%w) {permutation = array<i64: 2, 3, 1, 0>} : (tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.25:1, 0.5, 0.125:-1}>>) -> tensor<3x3x2x3x!quant.uniform<i8:f32:3, {0.25:1, 0.5, 0.125:-1}>>
    %c = "convc.conv"(%xt, %wt) {dimension_numbers = ["NHWC", "HWIO", "NCHW"], preferred_element_type = "!quant.uniform<i8:f32, 4.0>"} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x3x2x3x!quant.uniform<i8:f32:3, {0.25:1, 0.5, 0.125:-1}>>) -> tensor<1x3x3x3x!quant.uniform<i8:f32, 4.0>>
    %d = "convc.uniform_dequantize"(%c) : (tensor<1x3x3x3x!quant.uniform<i8:f32, 4.0>>) -> tensor<1x3x3x3xf32>
    func.return %d : tensor<1x3x3x3xf32>
  }
}
