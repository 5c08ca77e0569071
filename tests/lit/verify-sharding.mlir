// RUN: convc-opt %s --split-input-file --verify-diagnostics

// Shardings in convc text are checked as in a model file, each error one line at the
// sharding attribute (S1-S7; S8 is --mesh's: json/sharding_mesh_flag.test).

module @unknown_axis {
  sdy.mesh @mesh = <["data"=2]>
  // expected-error@+1 {{'x': sharding names axis 'model', which the mesh (data) lacks [S1]}}
  func.func @main(%x: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}) -> tensor<4x4xf32> {
    func.return %x : tensor<4x4xf32>
  }
}

// -----

module @axis_twice {
  sdy.mesh @mesh = <["data"=2]>
  func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    // expected-error@+1 {{'r': sharding uses axis 'data' twice [S2]}}
    %r = "convc.relu"(%x) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"data"}, {"data"}]>]>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    func.return %r : tensor<4x4xf32>
  }
}

// -----

module @too_long {
  sdy.mesh @mesh = <["data"=2]>
  // expected-error@+1 {{'x': sharding [null, null, "data"] has 3 entries but the value has rank 2 [S3]}}
  func.func @main(%x: tensor<4x4xf32>) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"data"}]>}) {
    func.return %x : tensor<4x4xf32>
  }
}

// -----

module @not_divisible {
  sdy.mesh @mesh = <["data"=2]>
  // expected-error@+1 {{'x': dimension 1 of size 5 is not divisible by data(2) = 2 [S4]}}
  func.func @main(%x: tensor<4x5xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}]>}) -> tensor<4x5xf32> {
    func.return %x : tensor<4x5xf32>
  }
}

// -----

module @mesh_size {
  // expected-error@+1 {{the size of mesh axis 'data' must be a positive integer, got 0 [S5]}}
  sdy.mesh @mesh = <["data"=0]>
  func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    func.return %x : tensor<4x4xf32>
  }
}

// -----

module @without_mesh {
  // expected-error@+1 {{'x' has a sharding but the graph has no mesh [S7]}}
  func.func @main(%x: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> tensor<4x4xf32> {
    func.return %x : tensor<4x4xf32>
  }
}

// -----

// convc text names its one mesh @mesh (X10).
module @mesh_name {
  // expected-error@+1 {{the mesh must be named @mesh [X10]}}
  sdy.mesh @other = <["data"=2]>
  func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    func.return %x : tensor<4x4xf32>
  }
}

// -----

// An op's sdy.sharding is a #sdy.sharding_per_value attribute (X10).
module @sharding_form {
  sdy.mesh @mesh = <["data"=2]>
  func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    // expected-error@+1 {{sdy.sharding must be a #sdy.sharding_per_value<[<@mesh, [...]>]> attribute [X10]}}
    %r = "convc.relu"(%x) {sdy.sharding = 3} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    func.return %r : tensor<4x4xf32>
  }
}
