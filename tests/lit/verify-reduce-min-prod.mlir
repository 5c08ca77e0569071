// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per reduce_min, reduce_prod and reduce_prod_grad diagnostic (compiler/ops/reduce.py),
// named after the StableHLO reduce constraint it breaks (or jax's rule, L2).
// STATUS-NOT: Traceback
// STATUS-COUNT-9: {{^}}{{.*}}verify-reduce-min-prod.mlir:{{[0-9]+}}:5: error: 'r' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 9{{$}}

// reduce_min.C4: axes are dimensions of x.
module @min_c4_axes_range {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{'r' (reduce_min): axes has dimension 2 out of range for rank 2 [reduce_min.C4]}}
    %r = "convc.reduce_min"(%x) {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<3xf32>
    func.return %r : tensor<3xf32>
  }
}

// -----

// reduce_min.C5: axes are distinct.
module @min_c5_axes_repeated {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
    // expected-error@+1 {{'r' (reduce_min): axes [1, 1] repeats a dimension [reduce_min.C5]}}
    %r = "convc.reduce_min"(%x) {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
    func.return %r : tensor<2xf32>
  }
}

// -----

// reduce_prod.C4: axes are dimensions of x.
module @prod_c4_axes_range {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<3xi32> {
    // expected-error@+1 {{'r' (reduce_prod): axes has dimension -1 out of range for rank 2 [reduce_prod.C4]}}
    %r = "convc.reduce_prod"(%x) {axes = array<i64: -1>} : (tensor<2x3xi32>) -> tensor<3xi32>
    func.return %r : tensor<3xi32>
  }
}

// -----

// reduce_prod.C5: axes are distinct.
module @prod_c5_axes_repeated {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{'r' (reduce_prod): axes [0, 0] repeats a dimension [reduce_prod.C5]}}
    %r = "convc.reduce_prod"(%x) {axes = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
    func.return %r : tensor<3xf32>
  }
}

// -----

// reduce_prod_grad.C1: x and out_grad have one element type.
module @grad_c1_dtypes {
  func.func @main(%x: tensor<2x3xf32>, %g: tensor<2xf16>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (reduce_prod_grad): element types differ: x is f32, out_grad f16 [reduce_prod_grad.C1]}}
    %r = "convc.reduce_prod_grad"(%x, %g) {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<2xf16>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// reduce_prod_grad.C2: out_grad has the shape of x reduced over axes.
module @grad_c2_shape {
  func.func @main(%x: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (reduce_prod_grad): out_grad has shape [3], expected [2] (x reduced over axes) [reduce_prod_grad.C2]}}
    %r = "convc.reduce_prod_grad"(%x, %g) {axes = array<i64: 1>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// reduce_prod_grad.C4: axes are dimensions of x.
module @grad_c4_axes_range {
  func.func @main(%x: tensor<2x3xf32>, %g: tensor<2xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (reduce_prod_grad): axes has dimension 2 out of range for rank 2 [reduce_prod_grad.C4]}}
    %r = "convc.reduce_prod_grad"(%x, %g) {axes = array<i64: 2>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// reduce_prod_grad.C5: axes are distinct.
module @grad_c5_axes_repeated {
  func.func @main(%x: tensor<2x3xf32>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
    // expected-error@+1 {{'r' (reduce_prod_grad): axes [0, 0] repeats a dimension [reduce_prod_grad.C5]}}
    %r = "convc.reduce_prod_grad"(%x, %g) {axes = array<i64: 0, 0>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    func.return %r : tensor<2x3xf32>
  }
}

// -----

// reduce_prod_grad.L2: a gradient is of floating values (jax.vjp's).
module @grad_l2_float {
  func.func @main(%x: tensor<2x3xi32>, %g: tensor<2xi32>) -> tensor<2x3xi32> {
    // expected-error@+1 {{'r' (reduce_prod_grad): reduce_prod_grad needs floating operands, got i32 [reduce_prod_grad.L2]}}
    %r = "convc.reduce_prod_grad"(%x, %g) {axes = array<i64: 1>} : (tensor<2x3xi32>, tensor<2xi32>) -> tensor<2x3xi32>
    func.return %r : tensor<2x3xi32>
  }
}
