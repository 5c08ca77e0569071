// RUN: convc-opt %s -p infer-shapes --split-input-file | filecheck %s
// RUN: convc-opt %S/inputs/infer-shapes.json -p infer-shapes | filecheck %s --check-prefix=JSON

// infer-shapes recomputes every result type from its op's shape rule. convc text
// states result types, and the reader checks them against the same rules (a wrong
// one is an error, see verify-ir.mlir), so the text cases below pin the rules to
// hand-computed types (agreeing with jax.eval_shape); the JSON model states no
// result types at all, so every JSON check is the rule's output alone.

// Strides, both dilations and explicit pads together. H: 9 padded to 10, a 3-tap kernel
// dilated 2 spans 5, stride 2 -> 3. W: 7 dilated 2 -> 13, padded to 17, window 2, stride 3 -> 6.
// CHECK-LABEL: module @conv_window
// CHECK: "convc.conv"
// CHECK-SAME: -> tensor<1x4x3x6xf32>
module @conv_window {
  func.func @main(%x: tensor<1x2x9x7xf32>, %w: tensor<4x2x3x2xf32>) -> tensor<1x4x3x6xf32> {
    %c = "convc.conv"(%x, %w) {lhs_dilation = array<i64: 1, 2>, padding = dense<[[1, 0], [2, 2]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 2, 1>, window_strides = array<i64: 2, 3>} : (tensor<1x2x9x7xf32>, tensor<4x2x3x2xf32>) -> tensor<1x4x3x6xf32>
    func.return %c : tensor<1x4x3x6xf32>
  }
}

// -----

// feature_group_count 3: the kernel sees 6 / 3 = 2 input features; 9 output features.
// CHECK-LABEL: module @feature_groups
// CHECK: "convc.conv"
// CHECK-SAME: -> tensor<2x9x3x3xf32>
module @feature_groups {
  func.func @main(%x: tensor<2x6x5x5xf32>, %w: tensor<9x2x3x3xf32>) -> tensor<2x9x3x3xf32> {
    %c = "convc.conv"(%x, %w) {feature_group_count = 3 : i64} : (tensor<2x6x5x5xf32>, tensor<9x2x3x3xf32>) -> tensor<2x9x3x3xf32>
    func.return %c : tensor<2x9x3x3xf32>
  }
}

// -----

// batch_group_count 2: the output batch is 4 / 2 = 2.
// CHECK-LABEL: module @batch_groups
// CHECK: "convc.conv"
// CHECK-SAME: -> tensor<2x6x3x3xf32>
module @batch_groups {
  func.func @main(%x: tensor<4x2x5x5xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x6x3x3xf32> {
    %c = "convc.conv"(%x, %w) {batch_group_count = 2 : i64} : (tensor<4x2x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x3x3xf32>
    func.return %c : tensor<2x6x3x3xf32>
  }
}

// -----

// A window larger than the input is empty: spatial size 0, not an error.
// CHECK-LABEL: module @empty_window
// CHECK: "convc.conv"
// CHECK-SAME: -> tensor<1x1x0x0xf32>
module @empty_window {
  func.func @main(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x0x0xf32> {
    %c = "convc.conv"(%x, %w) : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x0x0xf32>
    func.return %c : tensor<1x1x0x0xf32>
  }
}

// -----

// preferred_element_type sets the result element type (f16 operands, f32 result).
// CHECK-LABEL: module @preferred_element_type
// CHECK: "convc.conv"
// CHECK-SAME: -> tensor<2x4x5xf32>
module @preferred_element_type {
  func.func @main(%x: tensor<2x7x3xf16>, %w: tensor<3x3x5xf16>) -> tensor<2x4x5xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NWC", "WIO", "NWC"], padding = "SAME", preferred_element_type = f32, window_strides = array<i64: 2>} : (tensor<2x7x3xf16>, tensor<3x3x5xf16>) -> tensor<2x4x5xf32>
    func.return %c : tensor<2x4x5xf32>
  }
}

// -----

// Plain ops: pad with a negative edge and interior padding (6 + 5 + 1 - 1 = 11 rows),
// strided slice (rows 1..10 step 3 -> 3), concatenate, transpose and convert.
// CHECK-LABEL: module @plain_ops
// CHECK: "convc.pad"
// CHECK-SAME: -> tensor<11x4xf32>
// CHECK: "convc.slice"
// CHECK-SAME: -> tensor<3x4xf32>
// CHECK: "convc.concatenate"
// CHECK-SAME: -> tensor<3x8xf32>
// CHECK: "convc.transpose"
// CHECK-SAME: -> tensor<8x3xf32>
// CHECK: "convc.convert"
// CHECK-SAME: -> tensor<8x3xbf16>
module @plain_ops {
  func.func @main(%x: tensor<6x4xf32>) -> tensor<8x3xbf16> {
    %p = "convc.pad"(%x) {padding_config = dense<[[1, -1, 1], [0, 0, 0]]> : tensor<2x3xi64>} : (tensor<6x4xf32>) -> tensor<11x4xf32>
    %s = "convc.slice"(%p) {start_indices = array<i64: 1, 0>, limit_indices = array<i64: 10, 4>, strides = array<i64: 3, 1>} : (tensor<11x4xf32>) -> tensor<3x4xf32>
    %c = "convc.concatenate"(%s, %s) {dimension = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
    %t = "convc.transpose"(%c) {permutation = array<i64: 1, 0>} : (tensor<3x8xf32>) -> tensor<8x3xf32>
    %h = "convc.convert"(%t) {new_dtype = bf16} : (tensor<8x3xf32>) -> tensor<8x3xbf16>
    func.return %h : tensor<8x3xbf16>
  }
}

// The JSON model: SAME at stride 2 on 7x7 gives 4x4; NHWC -> NCHW; 5x16 padded by [2, -1, 1] on
// the columns is 5x32; a [1:5:2, 0:32:5] slice is 2x7; three of them stacked are 6x7.
// JSON-LABEL: module @infer_from_json
// JSON: func.func @main(%{{[^:]+}}: tensor<1x7x7x3xf32>) -> tensor<6x7xf16>
// JSON: %[[CONV:[^ ]+]] = "convc.conv"
// JSON-SAME: -> tensor<1x4x4x5xf32>
// JSON-NEXT: "convc.bias_add"(%[[CONV]], %{{[^)]+}})
// JSON-SAME: -> tensor<1x4x4x5xf32>
// JSON-NEXT: "convc.relu"
// JSON-SAME: -> tensor<1x4x4x5xf32>
// JSON-NEXT: "convc.transpose"
// JSON-SAME: -> tensor<1x5x4x4xf32>
// JSON-NEXT: "convc.reshape"
// JSON-SAME: -> tensor<5x16xf32>
// JSON-NEXT: "convc.pad"
// JSON-SAME: -> tensor<5x32xf32>
// JSON-NEXT: "convc.slice"
// JSON-SAME: -> tensor<2x7xf32>
// JSON-NEXT: "convc.concatenate"
// JSON-SAME: -> tensor<6x7xf32>
// JSON-NEXT: "convc.convert"
// JSON-SAME: -> tensor<6x7xf16>
