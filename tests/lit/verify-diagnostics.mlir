// RUN: %exit-status convc-opt %S/inputs/verify-diagnostics-mismatch.mlir --split-input-file --verify-diagnostics | filecheck %s
// RUN: convc-opt %s --verify-diagnostics

// convc-opt --verify-diagnostics (compiler/verify_diagnostics.py) fails, exit 1, when a
// chunk's expected error does not occur or an error occurs that no comment expects, one
// line each; it prints no IR.
// CHECK-NOT: Traceback
// CHECK: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:15:5: error: expected error "operand types differ" was not produced{{$}}
// CHECK-NEXT: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:25:5: error: unexpected error: 'r' (transpose): permutation [0, 0] is not a permutation of 0..1 [transpose.C2]{{$}}
// CHECK-NEXT: {{^}}exit status: 1, output lines: 2{{$}}

// Without --split-input-file the whole file is one input: this one, with no error and
// no expectation, passes (the second RUN line).
module @no_error {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}
