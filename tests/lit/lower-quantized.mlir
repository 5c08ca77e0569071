// RUN: convc-opt %s --split-input-file -p "lower-quantized{exact_f32=false}" | filecheck %s
// RUN: convc-opt %s --split-input-file -p lower-quantized | filecheck %s --check-prefix=F32
// RUN: convc-opt %s --split-input-file --default-pipeline cpu --emit=stablehlo | filecheck %s --check-prefix=CPU
// RUN: convc-opt %s --split-input-file --default-pipeline gpu --emit=stablehlo | filecheck %s --check-prefix=GPU

// lower-quantized: quantized values become their stored integers (inputs and outputs too)
// and each quantized op the spec's arithmetic on them (docs/passes.md). CHECK shows the i8
// convs with exact_f32=false (these convs are too small for YNNPACK, so by default they are
// f32 convs: F32); the last two cases, the default's choice.

// A per-axis quantized conv whose kernel is an input: the i8 x i8 -> i32 conv of the stored
// integers (no shift: the conv pads the stored values with 0, which skips padded taps), less
// z_w[o] times each window's input sum (a conv with a ones kernel, one output feature, spread
// over the three), less z_x times the kernel's sum over each position's valid taps (a conv of
// ones over the input, less z_w[o] times the valid tap count: fewer at the borders), then a
// per-feature f64 rescale rounded to f32 and the spec's quantize.
// CHECK-LABEL: module @per_axis_conv
// CHECK: func.func @main(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) -> tensor<1x3x5x5xi8>
// CHECK: %[[ACC:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]> : tensor<2x2xi64>, preferred_element_type = i32
// CHECK-SAME: : (tensor<1x2x5x5xi8>, tensor<3x2x3x3xi8>) -> tensor<1x3x5x5xi32>
// CHECK: %[[ONES:[^ ]+]] = "convc.constant"() {value = dense<1> : tensor<1x2x3x3xi8>}
// CHECK: %[[WS:[^ ]+]] = "convc.conv"(%x, %[[ONES]])
// CHECK-SAME: -> tensor<1x1x5x5xi32>
// CHECK: %[[WSB:[^ ]+]] = "convc.broadcast_in_dim"(%[[WS]]) {broadcast_dimensions = array<i64: 0, 1, 3, 4>, shape = array<i64: 1, 1, 3, 5, 5>}
// CHECK: %[[WSS:[^ ]+]] = "convc.reshape"(%[[WSB]]) {new_sizes = array<i64: 1, 3, 5, 5>}
// CHECK: %[[ZW:[^ ]+]] = "convc.constant"() {value = dense<[1, -2, 0]> : tensor<3xi32>}
// CHECK: %[[ZWB:[^ ]+]] = "convc.broadcast_in_dim"(%[[ZW]]) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 3, 5, 5>}
// CHECK: %[[ZWT:[^ ]+]] = "convc.multiply"(%[[WSS]], %[[ZWB]])
// CHECK: %[[ACC1:[^ ]+]] = "convc.subtract"(%[[ACC]], %[[ZWT]])
// CHECK: %[[VALID:[^ ]+]] = "convc.constant"() {value = dense<1> : tensor<1x2x5x5xi8>}
// CHECK: %[[KS:[^ ]+]] = "convc.conv"(%[[VALID]], %w)
// CHECK-SAME: -> tensor<1x3x5x5xi32>
// CHECK: %[[COUNTS:[^ ]+]] = "convc.constant"() {value = dense<"0x08000000
// CHECK: %[[KSS:[^ ]+]] = "convc.subtract"(%[[KS]], %[[COUNTS]])
// CHECK: %[[ZX:[^ ]+]] = "convc.constant"() {value = dense<-3> : tensor<i32>}
// CHECK: %[[ZXB:[^ ]+]] = "convc.broadcast_in_dim"(%[[ZX]])
// CHECK: %[[ZXT:[^ ]+]] = "convc.multiply"(%[[KSS]], %[[ZXB]])
// CHECK: %[[ACC2:[^ ]+]] = "convc.subtract"(%[[ACC1]], %[[ZXT]])
// CHECK: %[[ACC64:[^ ]+]] = "convc.convert"(%[[ACC2]]) {new_dtype = f64}
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

// The cpu pipeline: a conv of at most 16 features YNNPACK does not take, and XLA:CPU would
// run its i8 form as an i32 conv in its generic loop, so (its sums exact in f32) it is the f32
// conv of the shifted operands, channels-last after cpu-layout-nhwc (the kernel is an input:
// it keeps its layout), with no correction conv.
// CPU-LABEL: module @per_axis_conv
// CPU-NOT: quant
// CPU: stablehlo.convolution
// CPU-SAME: (tensor<1x5x5x2xf32>, tensor<3x2x3x3xf32>) -> tensor<1x5x5x3xf32>
// CPU-NOT: stablehlo.convolution
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

// A conv into its accumulator type (i32, zero point 0, per feature the product of the
// operands' scales: QLinearConv's import) is the exact sums themselves, read as plain i32 by
// `bitcast_convert` (which adds no op, and keeps the conv's name): no f64 rescale, no
// quantize. A plain i8 tensor bitcast to a quantized type is that type's stored integers:
// its dequantize reads them.
// CHECK-LABEL: module @accumulator_result
// CHECK: func.func @main(%x: tensor<1x2x4x4xi8>, %w: tensor<2x2x3x3xi8>, %p: tensor<2xi8>) -> (tensor<1x2x2x2xi32>, tensor<2xf32>)
// CHECK: %[[ACC:[^ ]+]] = "convc.conv"(%x, %w)
// CHECK-SAME: -> tensor<1x2x2x2xi32>
// CHECK-NOT: f64
// CHECK: %c = "convc.subtract"(%[[ACC]], %{{[^)]+}})
// CHECK: %[[P:[^ ]+]] = "convc.convert"(%p) {new_dtype = i32}
// CHECK: func.return %c, %{{[^ ]+}} : tensor<1x2x2x2xi32>, tensor<2xf32>
module @accumulator_result {
  func.func @main(%x: tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:3>>, %w: tensor<2x2x3x3x!quant.uniform<i8:f32:0, {0.25, 0.125}>>, %p: tensor<2xi8>) -> (tensor<1x2x2x2xi32>, tensor<2xf32>) {
    %c = "convc.conv"(%x, %w) {padding = dense<0> : tensor<2x2xi64>, preferred_element_type = "!quant.uniform<i32:f32:1, {0.125, 0.0625}>"} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:3>>, tensor<2x2x3x3x!quant.uniform<i8:f32:0, {0.25, 0.125}>>) -> tensor<1x2x2x2x!quant.uniform<i32:f32:1, {0.125, 0.0625}>>
    %s = "convc.bitcast_convert"(%c) {new_dtype = i32} : (tensor<1x2x2x2x!quant.uniform<i32:f32:1, {0.125, 0.0625}>>) -> tensor<1x2x2x2xi32>
    %q = "convc.bitcast_convert"(%p) {new_dtype = "!quant.uniform<i8:f32, 0.5:1>"} : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.5:1>>
    %d = "convc.uniform_dequantize"(%q) : (tensor<2x!quant.uniform<i8:f32, 0.5:1>>) -> tensor<2xf32>
    func.return %s, %d : tensor<1x2x2x2xi32>, tensor<2xf32>
  }
}

// CPU-LABEL: module @accumulator_result
// CPU: stablehlo.convolution
// CPU-NOT: f64
// CPU: return

// -----

// Quantized transposes (jax2tf's NCHW -> NHWC around a quantized conv) move stored integers;
// the per-axis kernel's quantization dimension followed its output features (0 -> 3).
// CHECK-LABEL: module @quantized_transposes
// CHECK: func.func @main(%x: tensor<1x2x5x5xi8>, %w: tensor<3x2x3x3xi8>) -> tensor<1x3x3x3xf32>
// CHECK: %xt = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x2x5x5xi8>) -> tensor<1x5x5x2xi8>
// CHECK: %wt = "convc.transpose"(%w) {permutation = array<i64: 2, 3, 1, 0>} : (tensor<3x2x3x3xi8>) -> tensor<3x3x2x3xi8>
// CHECK: "convc.conv"(%xt, %wt)
// CHECK-SAME: (tensor<1x5x5x2xi8>, tensor<3x3x2x3xi8>) -> tensor<1x3x3x3xi32>
// CHECK: "convc.constant"() {value = dense<[1, 0, -1]> : tensor<3xi32>}
// CHECK-NEXT: "convc.broadcast_in_dim"(%{{[^)]+}}) {broadcast_dimensions = array<i64: 1>, shape = array<i64: 1, 3, 3, 3>}
// CPU-LABEL: module @quantized_transposes
// CPU-NOT: quant
// CPU: stablehlo.convolution
// CPU-SAME: xf32>) -> tensor<{{[^>]+}}xf32>
module @quantized_transposes {
  func.func @main(%x: tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>, %w: tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.25:1, 0.5, 0.125:-1}>>) -> tensor<1x3x3x3xf32> {
    %xt = "convc.transpose"(%x) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x2x5x5x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x5x5x2x!quant.uniform<i8:f32, 0.5:-3>>
    %wt = "convc.transpose"(%w) {permutation = array<i64: 2, 3, 1, 0>} : (tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.25:1, 0.5, 0.125:-1}>>) -> tensor<3x3x2x3x!quant.uniform<i8:f32:3, {0.25:1, 0.5, 0.125:-1}>>
    %c = "convc.conv"(%xt, %wt) {dimension_numbers = ["NHWC", "HWIO", "NCHW"], preferred_element_type = "!quant.uniform<i8:f32, 4.0>"} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<3x3x2x3x!quant.uniform<i8:f32:3, {0.25:1, 0.5, 0.125:-1}>>) -> tensor<1x3x3x3x!quant.uniform<i8:f32, 4.0>>
    %d = "convc.uniform_dequantize"(%c) : (tensor<1x3x3x3x!quant.uniform<i8:f32, 4.0>>) -> tensor<1x3x3x3xf32>
    func.return %d : tensor<1x3x3x3xf32>
  }
}

// -----

// A constant kernel with symmetric weights (zero point 0: ONNX's and TF's int8 weights) and an
// input zero point 0: the kernel's integers become an i8 constant here, and the i8 x i8 -> i32
// conv is the whole sum; no correction term.
// CHECK-LABEL: module @symmetric_constant_kernel
// CHECK: %[[W:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[}}1, -2, 3]]]> : tensor<1x1x3xi8>}
// CHECK: %[[ACC:[^ ]+]] = "convc.conv"(%x, %[[W]])
// CHECK-SAME: preferred_element_type = i32
// CHECK-SAME: : (tensor<2x1x4xi8>, tensor<1x1x3xi8>) -> tensor<2x1x4xi32>
// CHECK-NEXT: "convc.convert"(%[[ACC]]) {new_dtype = f64}
// CPU-LABEL: module @symmetric_constant_kernel
// CPU-NOT: quant
// CPU: stablehlo.convolution
// CPU-SAME: xf32>) -> tensor<{{[^>]+}}xf32>
// CPU-NOT: stablehlo.convolution
// CPU: stablehlo.round_nearest_even
module @symmetric_constant_kernel {
  func.func @main(%x: tensor<2x1x4x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x1x4x!quant.uniform<i8:f32, 0.125>> {
    %wr = "convc.constant"() {value = dense<[[[0.25, -0.5, 0.75]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
    %w = "convc.uniform_quantize"(%wr) {new_dtype = "!quant.uniform<i8:f32, 0.25>"} : (tensor<1x1x3xf32>) -> tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCH", "OIH", "NCH"], padding = dense<1> : tensor<1x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 0.125>"} : (tensor<2x1x4x!quant.uniform<i8:f32, 0.5>>, tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>) -> tensor<2x1x4x!quant.uniform<i8:f32, 0.125>>
    func.return %c : tensor<2x1x4x!quant.uniform<i8:f32, 0.125>>
  }
}

// -----

// An input zero point (2) with a constant symmetric kernel [1, 2, 3] padded by 1: the z_x term is
// a constant, 2 * the kernel's sum over each position's valid taps: 2 * [2+3, 1+2+3, 1+2+3, 1+2]
// at the borders exact, the same for both batch entries (broadcast).
// CHECK-LABEL: module @padded_input_zero_point
// CHECK: %[[ACC:[^ ]+]] = "convc.conv"(%x, %{{[^)]+}})
// CHECK-SAME: -> tensor<2x1x4xi32>
// CHECK-NEXT: %[[T:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[}}10, 12, 12, 6]]]> : tensor<1x1x4xi32>}
// CHECK-NEXT: %[[TB:[^ ]+]] = "convc.broadcast_in_dim"(%[[T]]) {broadcast_dimensions = array<i64: 0, 1, 2>, shape = array<i64: 2, 1, 4>}
// CHECK-NEXT: %[[SUM:[^ ]+]] = "convc.subtract"(%[[ACC]], %[[TB]])
// CHECK-NEXT: "convc.convert"(%[[SUM]]) {new_dtype = f64}
// CHECK-NOT: "convc.conv"
// The gpu pipeline keeps the f64 conv of the shifted operands.
// GPU-LABEL: module @padded_input_zero_point
// GPU: stablehlo.convolution
// GPU-SAME: (tensor<2x1x4xf64>, tensor<1x1x3xf64>) -> tensor<2x1x4xf64>
module @padded_input_zero_point {
  func.func @main(%x: tensor<2x1x4x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<2x1x4x!quant.uniform<i8:f32, 0.125>> {
    %wr = "convc.constant"() {value = dense<[[[0.25, 0.5, 0.75]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
    %w = "convc.uniform_quantize"(%wr) {new_dtype = "!quant.uniform<i8:f32, 0.25>"} : (tensor<1x1x3xf32>) -> tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCH", "OIH", "NCH"], padding = dense<1> : tensor<1x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 0.125>"} : (tensor<2x1x4x!quant.uniform<i8:f32, 0.5:2>>, tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>) -> tensor<2x1x4x!quant.uniform<i8:f32, 0.125>>
    func.return %c : tensor<2x1x4x!quant.uniform<i8:f32, 0.125>>
  }
}

// -----

// A transposed conv's form (lhs dilation 2, padding 2): holes and padding are both real zeros,
// so only the taps on input elements count: for the kernel [1, 2, 3] the valid-tap sums are
// [3, 2, 1+3, 2, 1+3, 2, 1], times z_x = 2.
// CHECK-LABEL: module @lhs_dilated_input_zero_point
// CHECK: "convc.constant"() {value = dense<{{\[\[\[}}6, 4, 8, 4, 8, 4, 2]]]> : tensor<1x1x7xi32>}
module @lhs_dilated_input_zero_point {
  func.func @main(%x: tensor<1x1x3x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<1x1x7x!quant.uniform<i8:f32, 0.125>> {
    %wr = "convc.constant"() {value = dense<[[[0.25, 0.5, 0.75]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
    %w = "convc.uniform_quantize"(%wr) {new_dtype = "!quant.uniform<i8:f32, 0.25>"} : (tensor<1x1x3xf32>) -> tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCH", "OIH", "NCH"], lhs_dilation = array<i64: 2>, padding = dense<2> : tensor<1x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 0.125>"} : (tensor<1x1x3x!quant.uniform<i8:f32, 0.5:2>>, tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x1x7x!quant.uniform<i8:f32, 0.125>>
    func.return %c : tensor<1x1x7x!quant.uniform<i8:f32, 0.125>>
  }
}

// -----

// u8 storage moves into i8 by subtracting 128, its zero point with it: the input's 128 becomes
// 0 (no z_x term), the constant kernel's stored [128, 131, 140] become [0, 3, 12] here and its
// zero point 130 becomes 2: a z_w term (a ones-kernel conv of the moved input, times 2).
// CHECK-LABEL: module @u8_operands
// CHECK: %[[XW:[^ ]+]] = "convc.convert"(%x) {new_dtype = i32}
// CHECK: %[[OFF:[^ ]+]] = "convc.constant"() {value = dense<128> : tensor<i32>}
// CHECK: %[[OFFB:[^ ]+]] = "convc.broadcast_in_dim"(%[[OFF]])
// CHECK: %[[XM:[^ ]+]] = "convc.subtract"(%[[XW]], %[[OFFB]])
// CHECK: %[[X8:[^ ]+]] = "convc.convert"(%[[XM]]) {new_dtype = i8}
// CHECK: %[[W:[^ ]+]] = "convc.constant"() {value = dense<{{\[\[\[}}0, 3, 12]]]> : tensor<1x1x3xi8>}
// CHECK: %[[ACC:[^ ]+]] = "convc.conv"(%[[X8]], %[[W]])
// CHECK: %[[ONES:[^ ]+]] = "convc.constant"() {value = dense<1> : tensor<1x1x3xi8>}
// CHECK: %[[WS:[^ ]+]] = "convc.conv"(%[[X8]], %[[ONES]])
// CHECK: %[[ZW:[^ ]+]] = "convc.constant"() {value = dense<2> : tensor<i32>}
// CHECK: %[[ZWB:[^ ]+]] = "convc.broadcast_in_dim"(%[[ZW]])
// CHECK: %[[T:[^ ]+]] = "convc.multiply"(%[[WS]], %[[ZWB]])
// CHECK: %[[SUM:[^ ]+]] = "convc.subtract"(%[[ACC]], %[[T]])
// CHECK-NEXT: "convc.convert"(%[[SUM]]) {new_dtype = f64}
module @u8_operands {
  func.func @main(%x: tensor<1x1x5x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<1x1x3x!quant.uniform<i8:f32, 0.25>> {
    %wr = "convc.constant"() {value = dense<[[[-1.0, 0.5, 5.0]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
    %w = "convc.uniform_quantize"(%wr) {new_dtype = "!quant.uniform<u8:f32, 0.5:130>"} : (tensor<1x1x3xf32>) -> tensor<1x1x3x!quant.uniform<u8:f32, 0.5:130>>
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCH", "OIH", "NCH"], preferred_element_type = "!quant.uniform<i8:f32, 0.25>"} : (tensor<1x1x5x!quant.uniform<u8:f32, 0.5:128>>, tensor<1x1x3x!quant.uniform<u8:f32, 0.5:130>>) -> tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>
    func.return %c : tensor<1x1x3x!quant.uniform<i8:f32, 0.25>>
  }
}

// -----

// A grouped conv whose sums f32 holds exactly (here at most 9 * 136 * 130 < 2^24): XLA:CPU
// would run the i8 conv as a dense one over a block-diagonal kernel it builds on every call,
// so it is the f32 conv of the shifted operands, which the cpu pipeline turns into a tap sum:
// no integer conv is left. Its padding goes on the stored i8 values, as the zero point (-8),
// which the shift makes the real 0: a pad of bytes, not of f32 values, and the conv pads nothing.
// The conv asks for HIGHEST precision: the direct sums, which no rewrite regroups (cpu-conv-winograd).
// F32-LABEL: module @depthwise_in_f32
// F32: %[[XP:[^ ]+]] = "convc.pad"(%x) {padding_config = dense<[[0, 0, 0], [0, 0, 0], [1, 1, 0], [1, 1, 0]]> : tensor<4x3xi64>, padding_value = -8.0 : f64}
// F32-SAME: -> tensor<1x4x8x8xi8>
// F32-NEXT: %[[XF:[^ ]+]] = "convc.convert"(%[[XP]]) {new_dtype = f32}
// F32: %[[XS:[^ ]+]] = "convc.subtract"(%[[XF]], %{{[^)]+}})
// F32: %[[WF:[^ ]+]] = "convc.convert"(%w) {new_dtype = f32}
// F32: %[[WS:[^ ]+]] = "convc.subtract"(%[[WF]], %{{[^)]+}})
// F32: %[[ACC:[^ ]+]] = "convc.conv"(%[[XS]], %[[WS]])
// F32-SAME: {dimension_numbers = ["NCHW", "OIHW", "NCHW"], feature_group_count = 4 : i64, precision = "HIGHEST"}
// F32-SAME: -> tensor<1x4x6x6xf32>
// F32-NEXT: "convc.convert"(%[[ACC]]) {new_dtype = f64}
// The quantized result is an optimization_barrier's, so that XLA computes the tap sum once
// rather than in each fusion that reads it; the gpu pipeline's f64 conv has none.
// F32: %[[STORED:[^ ]+]] = "convc.convert"(%{{[^)]+}}) {new_dtype = i8}
// F32-NEXT: %c = "convc.optimization_barrier"(%[[STORED]])
// CPU-LABEL: module @depthwise_in_f32
// CPU-NOT: stablehlo.convolution
// CPU: stablehlo.multiply {{.*}} : tensor<1x6x6x4xf32>
// CPU-NOT: stablehlo.convolution
// CPU: %[[STORED:[^ ]+]] = stablehlo.convert %{{[^ ]+}} : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xi8>
// CPU-NEXT: %[[ONCE:[^ ]+]] = stablehlo.optimization_barrier %[[STORED]] : tensor<1x6x6x4xi8>
// CPU-NEXT: %c = stablehlo.transpose %[[ONCE]]
// CPU: return %c : tensor<1x4x6x6xi8>
// GPU-LABEL: module @depthwise_in_f32
// GPU: stablehlo.convolution
// GPU-SAME: -> tensor<1x4x6x6xf64>
// GPU-NOT: optimization_barrier
module @depthwise_in_f32 {
  func.func @main(%x: tensor<1x4x6x6x!quant.uniform<i8:f32, 0.5:-8>>, %w: tensor<4x1x3x3x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.05:3, 0.1}>>) -> tensor<1x4x6x6x!quant.uniform<i8:f32, 0.25:4>> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"], feature_group_count = 4, padding = dense<1> : tensor<2x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 0.25:4>"} : (tensor<1x4x6x6x!quant.uniform<i8:f32, 0.5:-8>>, tensor<4x1x3x3x!quant.uniform<i8:f32:0, {0.1, 0.2, 0.05:3, 0.1}>>) -> tensor<1x4x6x6x!quant.uniform<i8:f32, 0.25:4>>
    func.return %c : tensor<1x4x6x6x!quant.uniform<i8:f32, 0.25:4>>
  }
}

// -----

// A grouped conv whose sums f32 may not hold (1024 taps of |x| <= 128 times |w| <= 128 reach
// 2^24) stays the i8 x i8 -> i32 conv.
// F32-LABEL: module @grouped_past_f32
// F32-NOT: f32>
// F32: "convc.conv"(%x, %w)
// F32-SAME: feature_group_count = 2 : i64, preferred_element_type = i32
// F32-SAME: -> tensor<1x2x1xi32>
module @grouped_past_f32 {
  func.func @main(%x: tensor<1x2048x1x!quant.uniform<i8:f32, 0.5>>, %w: tensor<2x1024x1x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x2x1x!quant.uniform<i8:f32, 0.25>> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCH", "OIH", "NCH"], feature_group_count = 2, preferred_element_type = "!quant.uniform<i8:f32, 0.25>"} : (tensor<1x2048x1x!quant.uniform<i8:f32, 0.5>>, tensor<2x1024x1x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x2x1x!quant.uniform<i8:f32, 0.25>>
    func.return %c : tensor<1x2x1x!quant.uniform<i8:f32, 0.25>>
  }
}

// -----

// A conv YNNPACK takes (2-D, channels-last by then, more than 16 features, its window and
// output no larger than its input): the cpu pipeline keeps the i8 x i8 -> i32 conv.
// CPU-LABEL: module @ynnpack_sized_conv
// CPU: stablehlo.convolution(%x, %w)
// CPU-SAME: (tensor<1x4x4x32xi8>, tensor<3x3x32x32xi8>) -> tensor<1x4x4x32xi32>
// CPU-NOT: optimization_barrier
module @ynnpack_sized_conv {
  func.func @main(%x: tensor<1x4x4x32x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x3x32x32x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x4x4x32x!quant.uniform<i8:f32, 8.0>> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = dense<1> : tensor<2x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 8.0>"} : (tensor<1x4x4x32x!quant.uniform<i8:f32, 0.5>>, tensor<3x3x32x32x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x4x4x32x!quant.uniform<i8:f32, 8.0>>
    func.return %c : tensor<1x4x4x32x!quant.uniform<i8:f32, 8.0>>
  }
}

// -----

// A 3-D conv is judged by the 2-D convs cpu-conv3d-as-conv2d-sum makes of it (one per tap
// of its depth, the depth folded into the batch), which YNNPACK takes: the cpu pipeline keeps
// the i8 x i8 -> i32 conv and splits it, though f32 would hold this conv's sums exactly.
// CPU-LABEL: module @ynnpack_sized_conv3d
// CPU: %[[SLAB:[^ ]+]] = stablehlo.convolution(%{{[^ ]+}}, %{{[^ ]+}})
// CPU-SAME: (tensor<3x4x4x32xi8>, tensor<3x3x32x32xi8>) -> tensor<3x4x4x32xi32>
// CPU: stablehlo.add %[[SLAB]], %{{[^ ]+}} : tensor<3x4x4x32xi32>
module @ynnpack_sized_conv3d {
  func.func @main(%x: tensor<1x3x4x4x32x!quant.uniform<i8:f32, 0.5>>, %w: tensor<3x3x3x32x32x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x3x4x4x32x!quant.uniform<i8:f32, 8.0>> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NDHWC", "DHWIO", "NDHWC"], padding = dense<1> : tensor<3x2xi64>, preferred_element_type = "!quant.uniform<i8:f32, 8.0>"} : (tensor<1x3x4x4x32x!quant.uniform<i8:f32, 0.5>>, tensor<3x3x3x32x32x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x3x4x4x32x!quant.uniform<i8:f32, 8.0>>
    func.return %c : tensor<1x3x4x4x32x!quant.uniform<i8:f32, 8.0>>
  }
}

// -----

// The gpu pipeline (no integer convs: XLA:GPU compiles none) makes a plain integer conv, as
// ONNX's ConvInteger imports, the f64 conv of its operands converted back; the cpu pipeline
// keeps this one an integer conv: its operands are i32 graph inputs, which nothing bounds, so
// f32 might not hold its sums (exact_f32 makes such a conv an f32 one only where it does: below).
// CHECK-LABEL: module @plain_integer_conv
// CHECK: "convc.conv"(%x, %w)
// CHECK-SAME: -> tensor<1x3x5x5xi32>
// F32-LABEL: module @plain_integer_conv
// F32-NOT: f32
// F32: "convc.conv"(%x, %w)
// F32-SAME: -> tensor<1x3x5x5xi32>
// GPU-LABEL: module @plain_integer_conv
// GPU: %[[L:[^ ]+]] = stablehlo.convert %x : (tensor<1x2x5x5xi32>) -> tensor<1x2x5x5xf64>
// GPU: %[[R:[^ ]+]] = stablehlo.convert %w : (tensor<3x2x3x3xi32>) -> tensor<3x2x3x3xf64>
// GPU: %[[S:[^ ]+]] = stablehlo.convolution(%[[L]], %[[R]])
// GPU-SAME: -> tensor<1x3x5x5xf64>
// GPU: %c = stablehlo.convert %[[S]] : (tensor<1x3x5x5xf64>) -> tensor<1x3x5x5xi32>
// CPU-LABEL: module @plain_integer_conv
// CPU: stablehlo.convolution
// CPU-SAME: xi32>) -> tensor<1x5x5x3xi32>
module @plain_integer_conv {
  func.func @main(%x: tensor<1x2x5x5xi32>, %w: tensor<3x2x3x3xi32>) -> tensor<1x3x5x5xi32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"], padding = dense<1> : tensor<2x2xi64>} : (tensor<1x2x5x5xi32>, tensor<3x2x3x3xi32>) -> tensor<1x3x5x5xi32>
    func.return %c : tensor<1x3x5x5xi32>
  }
}

// -----

// A plain i32 conv as ONNX's ConvInteger imports one after DynamicQuantizeLinear: u8 values
// less a run-time u8 zero point (within [-255, 255]) and a constant kernel whose largest
// per-output-feature sum of |w| is 127 * 518 = 65786, so every partial sum is at most
// 255 * 65786 = 16775430 < 2^24. With exact_f32 (the cpu pipeline's default) it is the f32 conv of the
// converted operands, the kernel an f32 constant, converted back to i32: the same integers,
// and no integer conv for XLA:CPU's generic loop (the cpu pipeline then makes this 1x1 conv
// an f32 dot). Without exact_f32 it stays the i32 conv.
// CHECK-LABEL: module @conv_integer_in_f32
// CHECK: "convc.conv"(%[[X:[^,]+]], %w)
// CHECK-SAME: -> tensor<1x2x4x4xi32>
// F32-LABEL: module @conv_integer_in_f32
// F32: %[[SHIFTED:[^ ]+]] = "convc.subtract"
// F32: %[[XF:[^ ]+]] = "convc.convert"(%[[SHIFTED]]) {new_dtype = f32}
// F32: %[[WF:[^ ]+]] = "convc.constant"() {value = dense<-127.0> : tensor<2x518x1x1xf32>}
// F32: %[[SUMS:[^ ]+]] = "convc.conv"(%[[XF]], %[[WF]])
// F32-SAME: -> tensor<1x2x4x4xf32>
// F32: %c = "convc.convert"(%[[SUMS]]) {new_dtype = i32}
// F32-SAME: -> tensor<1x2x4x4xi32>
// CPU-LABEL: module @conv_integer_in_f32
// CPU-NOT: stablehlo.convolution
// CPU: stablehlo.dot_general
// CPU-SAME: xf32>) -> tensor<1x4x4x2xf32>
// CPU-NOT: stablehlo.convolution
// CPU: return
module @conv_integer_in_f32 {
  func.func @main(%x: tensor<1x518x4x4xui8>, %zp: tensor<ui8>) -> tensor<1x2x4x4xi32> {
    %x32 = "convc.convert"(%x) {new_dtype = i32} : (tensor<1x518x4x4xui8>) -> tensor<1x518x4x4xi32>
    %zp32 = "convc.convert"(%zp) {new_dtype = i32} : (tensor<ui8>) -> tensor<i32>
    %zpb = "convc.broadcast_in_dim"(%zp32) {broadcast_dimensions = array<i64>, shape = array<i64: 1, 518, 4, 4>} : (tensor<i32>) -> tensor<1x518x4x4xi32>
    %shifted = "convc.subtract"(%x32, %zpb) : (tensor<1x518x4x4xi32>, tensor<1x518x4x4xi32>) -> tensor<1x518x4x4xi32>
    %w = "convc.constant"() {value = dense<-127> : tensor<2x518x1x1xi32>} : () -> tensor<2x518x1x1xi32>
    %c = "convc.conv"(%shifted, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"]} : (tensor<1x518x4x4xi32>, tensor<2x518x1x1xi32>) -> tensor<1x2x4x4xi32>
    func.return %c : tensor<1x2x4x4xi32>
  }
}

// -----

// The same with one input feature more: 255 * 127 * 519 = 16807815 >= 2^24, so a partial
// sum over all features might not be an f32 integer. The kernel is a constant: the conv is
// one f32 conv per range of input features whose sums stay below 2^24 (the first 518, then
// the last), each converted to i32, added in i32 (which wraps as the i32 conv would).
// F32-LABEL: module @conv_integer_in_f32_ranges
// F32: %[[L0:[^ ]+]] = "convc.slice"(%shifted) {limit_indices = array<i64: 1, 518, 4, 4>, start_indices = array<i64: 0, 0, 0, 0>}
// F32: %[[F0:[^ ]+]] = "convc.convert"(%[[L0]]) {new_dtype = f32}
// F32: %[[W0:[^ ]+]] = "convc.constant"() {value = dense<-127.0> : tensor<2x518x1x1xf32>}
// F32: %[[S0:[^ ]+]] = "convc.conv"(%[[F0]], %[[W0]])
// F32: %[[I0:[^ ]+]] = "convc.convert"(%[[S0]]) {new_dtype = i32}
// F32: %[[L1:[^ ]+]] = "convc.slice"(%shifted) {limit_indices = array<i64: 1, 519, 4, 4>, start_indices = array<i64: 0, 518, 0, 0>}
// F32: %[[F1:[^ ]+]] = "convc.convert"(%[[L1]]) {new_dtype = f32}
// F32: %[[W1:[^ ]+]] = "convc.constant"() {value = dense<-127.0> : tensor<2x1x1x1xf32>}
// F32: %[[S1:[^ ]+]] = "convc.conv"(%[[F1]], %[[W1]])
// F32: %[[I1:[^ ]+]] = "convc.convert"(%[[S1]]) {new_dtype = i32}
// F32: %c = "convc.add"(%[[I0]], %[[I1]])
// F32-NOT: "convc.conv"
// F32: func.return %c
module @conv_integer_in_f32_ranges {
  func.func @main(%x: tensor<1x519x4x4xui8>, %zp: tensor<ui8>) -> tensor<1x2x4x4xi32> {
    %x32 = "convc.convert"(%x) {new_dtype = i32} : (tensor<1x519x4x4xui8>) -> tensor<1x519x4x4xi32>
    %zp32 = "convc.convert"(%zp) {new_dtype = i32} : (tensor<ui8>) -> tensor<i32>
    %zpb = "convc.broadcast_in_dim"(%zp32) {broadcast_dimensions = array<i64>, shape = array<i64: 1, 519, 4, 4>} : (tensor<i32>) -> tensor<1x519x4x4xi32>
    %shifted = "convc.subtract"(%x32, %zpb) : (tensor<1x519x4x4xi32>, tensor<1x519x4x4xi32>) -> tensor<1x519x4x4xi32>
    %w = "convc.constant"() {value = dense<-127> : tensor<2x519x1x1xi32>} : () -> tensor<2x519x1x1xi32>
    %c = "convc.conv"(%shifted, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"]} : (tensor<1x519x4x4xi32>, tensor<2x519x1x1xi32>) -> tensor<1x2x4x4xi32>
    func.return %c : tensor<1x2x4x4xi32>
  }
}

// -----

// One input feature whose 519 taps alone may pass 2^24 (255 * 127 * 519): no range of
// features is exact in f32, so the conv stays i32.
// F32-LABEL: module @conv_integer_past_f32
// F32-NOT: f32
// F32: "convc.conv"(%shifted, %w)
// F32-SAME: -> tensor<1x2x1x1xi32>
// F32-NOT: f32
module @conv_integer_past_f32 {
  func.func @main(%x: tensor<1x1x1x519xui8>, %zp: tensor<ui8>) -> tensor<1x2x1x1xi32> {
    %x32 = "convc.convert"(%x) {new_dtype = i32} : (tensor<1x1x1x519xui8>) -> tensor<1x1x1x519xi32>
    %zp32 = "convc.convert"(%zp) {new_dtype = i32} : (tensor<ui8>) -> tensor<i32>
    %zpb = "convc.broadcast_in_dim"(%zp32) {broadcast_dimensions = array<i64>, shape = array<i64: 1, 1, 1, 519>} : (tensor<i32>) -> tensor<1x1x1x519xi32>
    %shifted = "convc.subtract"(%x32, %zpb) : (tensor<1x1x1x519xi32>, tensor<1x1x1x519xi32>) -> tensor<1x1x1x519xi32>
    %w = "convc.constant"() {value = dense<-127> : tensor<2x1x1x519xi32>} : () -> tensor<2x1x1x519xi32>
    %c = "convc.conv"(%shifted, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"]} : (tensor<1x1x1x519xi32>, tensor<2x1x1x519xi32>) -> tensor<1x2x1x1xi32>
    func.return %c : tensor<1x2x1x1xi32>
  }
}

// -----

// A plain i32 dot_general as ONNX's MatMulInteger imports one after DynamicQuantizeLinear
// (a classifier head): u8 values less a run-time zero point (within [-255, 255]) times a
// constant whose largest sum of |b| over the contracted dim, per output element, is
// 127 * 518 = 65786, so every partial sum is at most 16775430 < 2^24. With exact_f32 it is
// the f32 dot_general of the converted operands converted back to i32; without, it stays i32.
// CHECK-LABEL: module @dot_integer_in_f32
// CHECK: "convc.dot_general"(%shifted, %b)
// CHECK-SAME: -> tensor<2x3xi32>
// F32-LABEL: module @dot_integer_in_f32
// F32: %[[AF:[^ ]+]] = "convc.convert"(%shifted) {new_dtype = f32}
// F32: %[[BF:[^ ]+]] = "convc.constant"() {value = dense<-127.0> : tensor<518x3xf32>}
// F32: %[[SUMS:[^ ]+]] = "convc.dot_general"(%[[AF]], %[[BF]])
// F32-SAME: -> tensor<2x3xf32>
// F32: %d = "convc.convert"(%[[SUMS]]) {new_dtype = i32}
// F32-SAME: -> tensor<2x3xi32>
module @dot_integer_in_f32 {
  func.func @main(%a: tensor<2x518xui8>, %zp: tensor<ui8>) -> tensor<2x3xi32> {
    %a32 = "convc.convert"(%a) {new_dtype = i32} : (tensor<2x518xui8>) -> tensor<2x518xi32>
    %zp32 = "convc.convert"(%zp) {new_dtype = i32} : (tensor<ui8>) -> tensor<i32>
    %zpb = "convc.broadcast_in_dim"(%zp32) {broadcast_dimensions = array<i64>, shape = array<i64: 2, 518>} : (tensor<i32>) -> tensor<2x518xi32>
    %shifted = "convc.subtract"(%a32, %zpb) : (tensor<2x518xi32>, tensor<2x518xi32>) -> tensor<2x518xi32>
    %b = "convc.constant"() {value = dense<-127> : tensor<518x3xi32>} : () -> tensor<518x3xi32>
    %d = "convc.dot_general"(%shifted, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<2x518xi32>, tensor<518x3xi32>) -> tensor<2x3xi32>
    func.return %d : tensor<2x3xi32>
  }
}

// -----

// One contracted value more: 255 * 127 * 519 >= 2^24, so the dot_general stays i32.
// F32-LABEL: module @dot_integer_past_f32
// F32-NOT: f32
// F32: "convc.dot_general"(%shifted, %b)
// F32-SAME: -> tensor<2x3xi32>
// F32-NOT: f32
module @dot_integer_past_f32 {
  func.func @main(%a: tensor<2x519xui8>, %zp: tensor<ui8>) -> tensor<2x3xi32> {
    %a32 = "convc.convert"(%a) {new_dtype = i32} : (tensor<2x519xui8>) -> tensor<2x519xi32>
    %zp32 = "convc.convert"(%zp) {new_dtype = i32} : (tensor<ui8>) -> tensor<i32>
    %zpb = "convc.broadcast_in_dim"(%zp32) {broadcast_dimensions = array<i64>, shape = array<i64: 2, 519>} : (tensor<i32>) -> tensor<2x519xi32>
    %shifted = "convc.subtract"(%a32, %zpb) : (tensor<2x519xi32>, tensor<2x519xi32>) -> tensor<2x519xi32>
    %b = "convc.constant"() {value = dense<-127> : tensor<519x3xi32>} : () -> tensor<519x3xi32>
    %d = "convc.dot_general"(%shifted, %b) {lhs_contracting_dimensions = array<i64: 1>, rhs_contracting_dimensions = array<i64: 0>} : (tensor<2x519xi32>, tensor<519x3xi32>) -> tensor<2x3xi32>
    func.return %d : tensor<2x3xi32>
  }
}
