// Input of verify-diagnostics.mlir: chunk 1 as expected, chunk 2 with an expectation
// that no error meets, chunk 3 with an error that no expectation names.
module @as_expected {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'relu' takes 1 inputs (x), got 2 [A4]}}
    %r = "convc.relu"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

module @missing {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{operand types differ}}
    %r = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

module @unexpected {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
    %r = "convc.transpose"(%x) {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    func.return %r : tensor<3x2xf32>
  }
}
