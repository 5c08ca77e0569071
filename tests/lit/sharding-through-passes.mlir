// RUN: convc-opt %s --split-input-file -p "lower-conv-transpose,canonicalize-dimension-numbers,resolve-padding,dce" | filecheck %s
// RUN: convc-opt %s --split-input-file --default-pipeline cpu | filecheck %s --check-prefix=CPU

// A rewrite that replaces a constrained value carries the constraint to its replacement
// (Graph.replace_all_uses_with); argument and result shardings stay where they are.

// CHECK-LABEL: module @transposed
// CHECK: func.func @main(%x: tensor<4x8x8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>}
// CHECK-NEXT: %t = "convc.conv"(%x, %w) {{.*}}lhs_dilation = array<i64: 2, 2>{{.*}}sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {"space"}, {}, {}]>]>}
// CHECK-SAME: -> tensor<4x16x16x4xf32>
// CHECK-NOT: convc.conv_transpose
module @transposed {
  sdy.mesh @mesh = <["data"=2, "space"=2]>
  func.func @main(%x: tensor<4x8x8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>}, %w: tensor<3x3x4x4xf32>) -> tensor<4x16x16x4xf32> {
    %t = "convc.conv_transpose"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME", strides = array<i64: 2, 2>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {"space"}, {}, {}]>]>} : (tensor<4x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<4x16x16x4xf32>
    %r = "convc.relu"(%t) : (tensor<4x16x16x4xf32>) -> tensor<4x16x16x4xf32>
    func.return %r : tensor<4x16x16x4xf32>
  }
}

// -----

// The cpu target rewrites a 1x1 conv into a dot_general: the constraint
// lands on the value that now stands for the conv.
// CPU-LABEL: module @pointwise
// CPU-NOT: "convc.conv"
// CPU: %c = "convc.dot_general"({{.*}}sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {}, {}, {}]>]>}
// CPU-SAME: -> tensor<4x8x8x6xf32>
// CPU-NEXT: "convc.relu"
module @pointwise {
  sdy.mesh @mesh = <["data"=2, "space"=2]>
  func.func @main(%x: tensor<4x8x8x4xf32>, %w: tensor<1x1x4x6xf32>) -> tensor<4x8x8x6xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {}, {}, {}]>]>} : (tensor<4x8x8x4xf32>, tensor<1x1x4x6xf32>) -> tensor<4x8x8x6xf32>
    %r = "convc.relu"(%c) : (tensor<4x8x8x6xf32>) -> tensor<4x8x8x6xf32>
    func.return %r : tensor<4x8x8x6xf32>
  }
}
