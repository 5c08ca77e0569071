// RUN: convc-opt %s --split-input-file -p canonicalize-dimension-numbers,resolve-padding --emit=stablehlo | filecheck %s
// RUN: convc %S/inputs/depthwise.json --target generic | filecheck %s --check-prefix=JSON

// The exact stablehlo.convolution syntax: compact dim_numbers, the window group
// (stride, pad, lhs_dilate, rhs_dilate, always all four), then batch_group_count,
// feature_group_count and a two-entry precision_config. The emitted text is also
// parsed and verified by MLIR's StableHLO dialect before convc-opt prints it.

// NHWC/HWIO/NHWC, SAME at stride 2 (pads [0, 1] per dim), defaults everywhere else.
// CHECK-LABEL: module @nhwc_hwio
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<1x8x8x4xf32> loc("x"), %[[W:[^:]+]]: tensor<3x3x4x8xf32> loc("w"))
// CHECK-SAME: -> (tensor<1x4x4x8xf32> {jax.result_info = "c"})
// CHECK-NEXT: %[[C:[^ ]+]] = stablehlo.convolution(%[[X]], %[[W]])
// CHECK-SAME: dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
// CHECK-SAME: window = {stride = [2, 2], pad = {{\[\[}}0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]}
// CHECK-SAME: {batch_group_count = 1 : i64, feature_group_count = 1 : i64,
// CHECK-SAME: precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}
// CHECK-SAME: : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32> loc("c")
// CHECK-NEXT: return %[[C]] : tensor<1x4x4x8xf32>
module @nhwc_hwio {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME", window_strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x4x4x8xf32>
    func.return %c : tensor<1x4x4x8xf32>
  }
}

// -----

// NCHW/OIHW/NCHW with a per-operand precision pair.
// CHECK-LABEL: module @nchw_oihw_precision_pair
// CHECK: stablehlo.convolution
// CHECK-SAME: dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
// CHECK-SAME: window = {stride = [1, 1], pad = {{\[\[}}1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]}
// CHECK-SAME: precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]
// CHECK-SAME: -> tensor<1x6x8x8xf32>
module @nchw_oihw_precision_pair {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x8x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NCHW", "OIHW", "NCHW"], padding = "SAME", precision = ["HIGH", "HIGHEST"]} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x8x8xf32>
    func.return %c : tensor<1x6x8x8xf32>
  }
}

// -----

// One precision applies to both operands.
// CHECK-LABEL: module @single_precision
// CHECK: precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]
module @single_precision {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32> {
    %c = "convc.conv"(%x, %w) {precision = "HIGHEST"} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
    func.return %c : tensor<1x6x6x6xf32>
  }
}

// -----

// An odd permutation of every operand, with both dilations: spatial dims are numbered
// in the kernel's order ("HIWO": H is 0, W is 1) and the dilations follow that order.
// CHECK-LABEL: module @odd_permutation
// CHECK: stablehlo.convolution
// CHECK-SAME: dim_numbers = [1, b, 0, f]x[0, i, 1, o]->[f, 1, b, 0],
// CHECK-SAME: window = {stride = [1, 1], pad = {{\[\[}}0, 0], [0, 0]], lhs_dilate = [2, 1], rhs_dilate = [1, 2]}
// CHECK-SAME: : (tensor<5x2x7x4xf32>, tensor<3x4x2x6xf32>) -> tensor<6x3x2x11xf32>
module @odd_permutation {
  func.func @main(%x: tensor<5x2x7x4xf32>, %w: tensor<3x4x2x6xf32>) -> tensor<6x3x2x11xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["WNHC", "HIWO", "CWNH"], lhs_dilation = array<i64: 2, 1>, rhs_dilation = array<i64: 1, 2>} : (tensor<5x2x7x4xf32>, tensor<3x4x2x6xf32>) -> tensor<6x3x2x11xf32>
    func.return %c : tensor<6x3x2x11xf32>
  }
}

// -----

// 1-D, two feature groups, SAME_LOWER at stride 2, f16 operands accumulating to an f32 result.
// CHECK-LABEL: module @conv1d_grouped
// CHECK: stablehlo.convolution
// CHECK-SAME: dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
// CHECK-SAME: window = {stride = [2], pad = {{\[\[}}1, 1]], lhs_dilate = [1], rhs_dilate = [1]}
// CHECK-SAME: {batch_group_count = 1 : i64, feature_group_count = 2 : i64,
// CHECK-SAME: : (tensor<2x9x4xf16>, tensor<3x2x8xf16>) -> tensor<2x5x8xf32>
module @conv1d_grouped {
  func.func @main(%x: tensor<2x9x4xf16>, %w: tensor<3x2x8xf16>) -> tensor<2x5x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NWC", "WIO", "NWC"], feature_group_count = 2 : i64, padding = "SAME_LOWER", preferred_element_type = f32, window_strides = array<i64: 2>} : (tensor<2x9x4xf16>, tensor<3x2x8xf16>) -> tensor<2x5x8xf32>
    func.return %c : tensor<2x5x8xf32>
  }
}

// -----

// 3-D, two batch groups (the output batch halves), default NCDHW layout.
// CHECK-LABEL: module @conv3d_batch_groups
// CHECK: stablehlo.convolution
// CHECK-SAME: dim_numbers = [b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2],
// CHECK-SAME: window = {stride = [1, 1, 1], pad = {{\[\[}}0, 0], [0, 0], [0, 0]], lhs_dilate = [1, 1, 1], rhs_dilate = [1, 1, 1]}
// CHECK-SAME: {batch_group_count = 2 : i64, feature_group_count = 1 : i64,
// CHECK-SAME: -> tensor<2x4x4x4x4xf32>
module @conv3d_batch_groups {
  func.func @main(%x: tensor<4x2x5x5x5xf32>, %w: tensor<4x2x2x2x2xf32>) -> tensor<2x4x4x4x4xf32> {
    %c = "convc.conv"(%x, %w) {batch_group_count = 2 : i64} : (tensor<4x2x5x5x5xf32>, tensor<4x2x2x2x2xf32>) -> tensor<2x4x4x4x4xf32>
    func.return %c : tensor<2x4x4x4x4xf32>
  }
}

// -----

// Explicit negative (cropping) and asymmetric pads are emitted as written.
// CHECK-LABEL: module @explicit_negative_pads
// CHECK: window = {stride = [1, 2], pad = {{\[\[}}-1, 2], [3, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]}
// CHECK-SAME: -> tensor<1x6x7x5xf32>
module @explicit_negative_pads {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x7x5xf32> {
    %c = "convc.conv"(%x, %w) {padding = dense<[[-1, 2], [3, 0]]> : tensor<2x2xi64>, window_strides = array<i64: 1, 2>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x7x5xf32>
    func.return %c : tensor<1x6x7x5xf32>
  }
}

// -----

// A conv whose result feeds another: the second uses the first's SSA name.
// CHECK-LABEL: module @chained
// CHECK: %[[C1:[^ ]+]] = stablehlo.convolution(%{{[^,]+}}, %{{[^)]+}})
// CHECK: %[[C2:[^ ]+]] = stablehlo.convolution(%[[C1]], %{{[^)]+}})
// CHECK: return %[[C2]]
module @chained {
  func.func @main(%x: tensor<1x2x6x6xf32>, %w1: tensor<2x2x3x3xf32>, %w2: tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32> {
    %c1 = "convc.conv"(%x, %w1) : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
    %c2 = "convc.conv"(%c1, %w2) : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
    func.return %c2 : tensor<1x4x4x4xf32>
  }
}

// From JSON through convc's default generic pipeline: a depthwise conv (4 groups,
// channel multiplier 2) from NHWC to NCHW, SAME on a dilated kernel, one precision.
// JSON-LABEL: module @depthwise
// JSON: func.func public @main(%[[IMAGE:[^:]+]]: tensor<2x6x6x4xf32> loc("image"))
// JSON-NEXT: %[[FILTER:[^ ]+]] = stablehlo.constant dense<0.25> : tensor<3x3x1x8xf32>
// JSON-NEXT: %[[DW:[^ ]+]] = stablehlo.convolution(%[[IMAGE]], %[[FILTER]])
// JSON-SAME: dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, f, 0, 1],
// JSON-SAME: window = {stride = [1, 2], pad = {{\[\[}}2, 2], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 1]}
// JSON-SAME: {batch_group_count = 1 : i64, feature_group_count = 4 : i64,
// JSON-SAME: precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]}
// JSON-SAME: : (tensor<2x6x6x4xf32>, tensor<3x3x1x8xf32>) -> tensor<2x8x6x3xf32>
// JSON-NEXT: return %[[DW]] : tensor<2x8x6x3xf32>
