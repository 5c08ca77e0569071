// RUN: convc-opt %s --default-pipeline cpu --split-input-file | filecheck %s

// A conv's `lowering` attribute replaces the cpu rewrites' cost model: the pass it names
// rewrites the conv even where the cost model would not, every other pass leaves it
// alone, "xla" leaves it to XLA. Convs a rewrite creates carry no pin and follow the cost
// model again.

// A grouped conv of 9 x 16 = 144 terms, over the cost model's max_terms = 100: pinned to
// cpu-depthwise-tap-sum it is rewritten all the same; its unpinned twin is left to XLA.
// CHECK-LABEL: module @beyond_cost_model
// CHECK: %pinned.grouped = "convc.reshape"(%x)
// CHECK: %pinned.term = "convc.multiply"
// CHECK: %free = "convc.conv"(%x, %w)
// CHECK-NOT: lowering
// CHECK-SAME: -> tensor<1x3x3x32xf32>
// CHECK: func.return %pinned, %free
module @beyond_cost_model {
  func.func @main(%x: tensor<1x5x5x32xf32>, %w: tensor<3x3x16x32xf32>) -> (tensor<1x3x3x32xf32>, tensor<1x3x3x32xf32>) {
    %pinned = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, lowering = "cpu-depthwise-tap-sum", padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x5x5x32xf32>, tensor<3x3x16x32xf32>) -> tensor<1x3x3x32xf32>
    %free = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 2 : i64, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x5x5x32xf32>, tensor<3x3x16x32xf32>) -> tensor<1x3x3x32xf32>
    func.return %pinned, %free : tensor<1x3x3x32xf32>, tensor<1x3x3x32xf32>
  }
}

// -----

// Pinned to "xla": a depthwise conv the cost model would turn into a tap sum, and a 1x1
// conv it would turn into a dot, stay XLA's convs (and keep their pins).
// CHECK-LABEL: module @xla
// CHECK: %depthwise = "convc.conv"(%x, %w)
// CHECK-SAME: lowering = "xla"
// CHECK: %pointwise = "convc.conv"(%x, %p)
// CHECK-SAME: lowering = "xla"
// CHECK-NOT: convc.dot_general
// CHECK-NOT: convc.multiply
module @xla {
  func.func @main(%x: tensor<1x5x5x4xf32>, %w: tensor<3x3x1x4xf32>, %p: tensor<1x1x4x2xf32>) -> (tensor<1x3x3x4xf32>, tensor<1x5x5x2xf32>) {
    %depthwise = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, lowering = "xla", padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x5x5x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x3x3x4xf32>
    %pointwise = "convc.conv"(%x, %p) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, lowering = "xla", padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x5x5x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x5x5x2xf32>
    func.return %depthwise, %pointwise : tensor<1x3x3x4xf32>, tensor<1x5x5x2xf32>
  }
}

// -----

// A depthwise weight gradient pinned to cpu-batch-group-to-feature-group: the
// cpu-batch-group-tap-reduce pass before it (which the cost model would pick) leaves it
// alone. The feature-grouped conv that pass creates carries no pin, so the cost model
// takes it on: cpu-depthwise-tap-sum sums it (18 terms).
// CHECK-LABEL: module @weight_grad
// CHECK-NOT: reduce_sum
// CHECK: %dw.regroup = "convc.transpose"(%dw.split)
// CHECK: %dw.merged = "convc.reshape"(%dw.regroup)
// CHECK-NOT: "convc.conv"
// CHECK: %dw.term = "convc.multiply"
// CHECK-NOT: "convc.conv"
// CHECK: func.return %dw
module @weight_grad {
  func.func @main(%x: tensor<2x5x5x4xf32>, %dy: tensor<2x3x3x4xf32>) -> tensor<3x3x1x4xf32> {
    %dw = "convc.conv"(%x, %dy) {batch_group_count = 4 : i64, dimension_numbers = #convc.dims<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, lowering = "cpu-batch-group-to-feature-group", padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>} : (tensor<2x5x5x4xf32>, tensor<2x3x3x4xf32>) -> tensor<3x3x1x4xf32>
    func.return %dw : tensor<3x3x1x4xf32>
  }
}

// -----

// A 3x3 transposed conv with stride 2 (phase kernels 1x1 to 2x2) pinned to
// cpu-transposed-conv-phases becomes four phases; its twin pinned to "xla" stays one
// lhs-dilated conv. The phase convs carry no pin: the 1x1 one becomes a dot_general under
// the cost model.
// CHECK-LABEL: module @unbalanced_phases
// CHECK: %pinned.phase_taps = "convc.slice"(%w)
// CHECK: %pinned.phase = "convc.dot_general"
// CHECK: %pinned.phase_1 = "convc.conv"
// CHECK-NOT: lowering
// CHECK-SAME: -> tensor<1x4x3x2xf32>
// CHECK: %pinned = "convc.slice"(%pinned.interleaved_2)
// CHECK: %kept = "convc.conv"(%x, %w)
// CHECK-SAME: lhs_dilation = array<i64: 2, 2>
module @unbalanced_phases {
  func.func @main(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x2xf32>) -> (tensor<1x7x7x2xf32>, tensor<1x7x7x2xf32>) {
    %pinned = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, lhs_dilation = array<i64: 2, 2>, lowering = "cpu-transposed-conv-phases", padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x7x7x2xf32>
    %kept = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, lhs_dilation = array<i64: 2, 2>, lowering = "xla", padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x7x7x2xf32>
    func.return %pinned, %kept : tensor<1x7x7x2xf32>, tensor<1x7x7x2xf32>
  }
}

// -----

// cpu-crop-negative-padding is a correctness fix, not a lowering choice: it crops a pinned
// conv too, and the cropped conv keeps the pin.
// CHECK-LABEL: module @cropped
// CHECK: %c.crop = "convc.slice"(%x)
// CHECK: %c = "convc.conv"(%c.crop, %w)
// CHECK-SAME: lowering = "xla"
module @cropped {
  func.func @main(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x4x4x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 4 : i64, lowering = "xla", padding = dense<[[-1, 1], [0, 0]]> : tensor<2x2xi64>} : (tensor<1x6x6x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x4x4x4xf32>
    func.return %c : tensor<1x4x4x4xf32>
  }
}
