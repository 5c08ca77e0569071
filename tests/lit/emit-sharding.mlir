// RUN: convc %s --target generic | filecheck %s
// RUN: convc %s --target generic --mesh data=2,space=2 | filecheck %s --check-prefix=RESIZED

// A sharded graph is emitted as JAX writes one: the partition counts on the module, one
// sdy.mesh, shardings on arguments and results, and a constraint on a pinned inner value
// that later uses read. The program stays global-shaped.

// CHECK-LABEL: module @seg attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
// CHECK-NEXT: sdy.mesh @mesh = <["data"=4, "space"=2]>
// CHECK-NEXT: func.func public @main(%x: tensor<8x16x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>} loc("x"),
// CHECK-SAME: %w: tensor<3x3x4x4xf32> loc("w"))
// CHECK-SAME: -> (tensor<8x16x16x4xf32> {jax.result_info = "y", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}, {}, {}]>},
// CHECK-SAME: tensor<8x16x16x4xf32> {jax.result_info = "r"})
// CHECK: %[[C:.*]] = stablehlo.convolution(%x, %w)
// CHECK-SAME: -> tensor<8x16x16x4xf32>
// CHECK-NEXT: %[[S:.*]] = sdy.sharding_constraint %[[C]] <@mesh, [{"data", "space"}, {}, {}, {}]> : tensor<8x16x16x4xf32>
// CHECK: stablehlo.maximum %[[S]],
// CHECK: stablehlo.convolution(%[[S]], %w)
// CHECK-NOT: sdy.sharding_constraint
// CHECK: return

// --mesh resizes the axes; the specs stay.
// RESIZED: module @seg attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
// RESIZED-NEXT: sdy.mesh @mesh = <["data"=2, "space"=2]>
module @seg {
  sdy.mesh @mesh = <["data"=4, "space"=2]>
  func.func @main(%x: tensor<8x16x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>}, %w: tensor<3x3x4x4xf32>) -> (tensor<8x16x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}, {}, {}]>}, tensor<8x16x16x4xf32>) {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME", sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data", "space"}, {}, {}, {}]>]>} : (tensor<8x16x16x4xf32>, tensor<3x3x4x4xf32>) -> tensor<8x16x16x4xf32>
    %r = "convc.relu"(%c) : (tensor<8x16x16x4xf32>) -> tensor<8x16x16x4xf32>
    %y = "convc.conv"(%c, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<8x16x16x4xf32>, tensor<3x3x4x4xf32>) -> tensor<8x16x16x4xf32>
    func.return %y, %r : tensor<8x16x16x4xf32>, tensor<8x16x16x4xf32>
  }
}
