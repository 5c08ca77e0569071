// RUN: convc-opt %s --split-input-file | convc-opt - --split-input-file | filecheck %s
// RUN: convc-opt %s --split-input-file -o %t.once
// RUN: convc-opt %t.once --split-input-file -o %t.twice
// RUN: diff %t.once %t.twice
// RUN: convc-opt %S/json/inputs/sharded.json | filecheck %s --check-prefix=JSON

// convc text holds the mesh and every pinned sharding: an argument's and a result's as
// `sdy.sharding` attributes, a constraint as the op result's `sdy.sharding` (Shardy's
// per-value form). Two trips change nothing; a spec shorter than the rank is padded.

// CHECK-LABEL: module @two_d_mesh
// CHECK-NEXT: sdy.mesh @mesh = <["data"=2, "space"=2]>
// CHECK-NEXT: func.func @main(%x: tensor<4x8x8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>}, %w: tensor<3x3x2x2xf32>)
// CHECK-SAME: -> (tensor<4x8x8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"space", "data"}, {}]>})
// CHECK: "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME", sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {}, {}, {}]>]>}
// CHECK: "convc.relu"(%c) : (tensor<4x8x8x2xf32>) -> tensor<4x8x8x2xf32>
module @two_d_mesh {
  sdy.mesh @mesh = <["data"=2, "space"=2]>
  func.func @main(%x: tensor<4x8x8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>}, %w: tensor<3x3x2x2xf32>) -> (tensor<4x8x8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"space", "data"}]>}) {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME", sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}]>]>} : (tensor<4x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<4x8x8x2xf32>
    %r = "convc.relu"(%c) : (tensor<4x8x8x2xf32>) -> tensor<4x8x8x2xf32>
    func.return %r : tensor<4x8x8x2xf32>
  }
}

// -----

// A mesh with nothing pinned: everything is left to the partitioner.
// CHECK-LABEL: module @mesh_only
// CHECK-NEXT: sdy.mesh @mesh = <["batch"=8]>
// CHECK-NEXT: func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
module @mesh_only {
  sdy.mesh @mesh = <["batch"=8]>
  func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %r = "convc.relu"(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    func.return %r : tensor<8x4xf32>
  }
}

// Loaded from a model file: a mesh, an input's, a constant's and an output's sharding, a nested axis list.
// JSON-LABEL: module @sharded
// JSON-NEXT: sdy.mesh @mesh = <["data"=4, "space"=2]>
// JSON-NEXT: func.func @main(%x: tensor<8x16x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>})
// JSON-SAME: -> (tensor<8x16x16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}, {}, {}]>})
// JSON: %w = "convc.constant"() {value = dense<{{.*}}> : tensor<3x3x4x8xf32>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}, {}, {"space", "data"}]>]>}
// JSON: %c1 = "convc.conv"(%x, %w2) {{.*}}sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {"space"}, {}, {}]>]>}
