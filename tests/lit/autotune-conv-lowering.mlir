// RUN: %python %S/tools/seed_autotune_cache.py %S/inputs/autotune-cache.json %t.json
// RUN: cp %t.json %t.before
// RUN: convc-opt %s -p "autotune-conv-lowering{cache=%t.json}" 2>%t.log | filecheck %s
// RUN: filecheck %s --input-file %t.log --check-prefix=LOG
// RUN: diff %t.json %t.before
// RUN: convc-opt %s -p "autotune-conv-lowering{cache=%t.json},cpu-conv-1x1-to-dot,cpu-depthwise-tap-sum" 2>/dev/null | filecheck %s --check-prefix=LOWERED

// Every conv here is answered by the cache (seeded from inputs/autotune-cache.json for this
// machine's device), so nothing is measured: the output is deterministic and the cache
// file is left as it was. The cache pins the depthwise conv to "xla", which the cost model
// would have rewritten (9 terms), and the 1x1 conv to cpu-conv-1x1-to-dot. The dense 1-D
// conv has one candidate ("xla") and gets no pin; a conv already pinned keeps its pin.
// Entries of another device (here one pinning the 1x1 conv to "xla") do not apply.

// CHECK-LABEL: module @cached
// CHECK: %depthwise = "convc.conv"(%x, %dw)
// CHECK-SAME: lowering = "xla"
// CHECK: %pointwise = "convc.conv"(%x, %pw)
// CHECK-SAME: lowering = "cpu-conv-1x1-to-dot"
// CHECK: %dense = "convc.conv"(%line, %w3)
// CHECK-NOT: lowering
// CHECK-SAME: -> tensor<1x6x8xf32>
// CHECK: %pinned = "convc.conv"(%x, %dw)
// CHECK-SAME: lowering = "cpu-depthwise-tap-sum"

// LOG: {{^}}autotune: 3 convs: 0 measured, 2 cached, 1 with one candidate{{$}}
// LOG-NOT: autotune

// The pins are obeyed: the depthwise conv stays XLA's, the 1x1 conv becomes a dot.
// LOWERED-LABEL: module @cached
// LOWERED: %depthwise = "convc.conv"
// LOWERED: "convc.dot_general"
// LOWERED: %dense = "convc.conv"
// LOWERED-NOT: "convc.conv"
// LOWERED: "convc.multiply"
module @cached {
  func.func @main(%x: tensor<1x8x8x8xf32>, %dw: tensor<3x3x1x8xf32>, %pw: tensor<1x1x8x4xf32>, %line: tensor<1x8x8xf32>, %w3: tensor<3x8x8xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x4xf32>, tensor<1x6x8xf32>, tensor<1x8x8x8xf32>) {
    %depthwise = "convc.conv"(%x, %dw) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 8 : i64, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x8x8x8xf32>, tensor<3x3x1x8xf32>) -> tensor<1x8x8x8xf32>
    %pointwise = "convc.conv"(%x, %pw) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x8x8x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x8x8x4xf32>
    %dense = "convc.conv"(%line, %w3) {dimension_numbers = #convc.dims<[b, 0, f]x[0, i, o]->[b, 0, f]>, padding = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<1x8x8xf32>, tensor<3x8x8xf32>) -> tensor<1x6x8xf32>
    %pinned = "convc.conv"(%x, %dw) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 8 : i64, lowering = "cpu-depthwise-tap-sum", padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x8x8x8xf32>, tensor<3x3x1x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %depthwise, %pointwise, %dense, %pinned : tensor<1x8x8x8xf32>, tensor<1x8x8x4xf32>, tensor<1x6x8xf32>, tensor<1x8x8x8xf32>
  }
}
