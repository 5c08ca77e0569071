// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per reduce_sum diagnostic (compiler/ops/reduce.py), named after the
// StableHLO reduce constraint it breaks.
// STATUS-NOT: Traceback
// STATUS-COUNT-2: {{^}}{{.*}}verify-reduce-sum.mlir:{{[0-9]+}}:5: error: 'r' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 2{{$}}

// reduce_sum.C4: axes are dimensions of x.
module @c4_axes_range {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<3xf32> {
    // expected-error@+1 {{'r' (reduce_sum): axes has dimension 2 out of range for rank 2 [reduce_sum.C4]}}
    %r = "convc.reduce_sum"(%x) {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<3xf32>
    func.return %r : tensor<3xf32>
  }
}

// -----

// reduce_sum.C5: axes are distinct.
module @c5_axes_repeated {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
    // expected-error@+1 {{'r' (reduce_sum): axes [1, 1] repeats a dimension [reduce_sum.C5]}}
    %r = "convc.reduce_sum"(%x) {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
    func.return %r : tensor<2xf32>
  }
}
