// Two small modules for --split-input-file (see timing.mlir).
module @first {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}

// -----

module @second {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = "convc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}
