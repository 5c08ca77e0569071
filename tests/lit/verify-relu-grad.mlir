// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per diagnostic of `relu_grad` (compiler/ops/relu_grad.py), each a single line
// located at the op. The whole file exits 1 with exactly those lines.
// STATUS-NOT: Traceback
// STATUS-COUNT-2: {{^}}{{.*}}verify-relu-grad.mlir:{{[0-9]+}}:5: error: 'r' (relu_grad): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 2{{$}}

// relu_grad: out_grad and x have one type.
module @relu_grad_types_differ {
  func.func @main(%g: tensor<4xf32>, %x: tensor<4xf16>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (relu_grad): out_grad type tensor<4xf32> differs from x type tensor<4xf16> [relu_grad.C1]}}
    %r = "convc.relu_grad"(%g, %x) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// relu_grad: floating operands only.
module @relu_grad_integer {
  func.func @main(%g: tensor<4xi32>, %x: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (relu_grad): relu_grad needs floating operands, got i32 [relu_grad.C2]}}
    %r = "convc.relu_grad"(%g, %x) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}
