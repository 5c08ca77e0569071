// Latin-1, not UTF-8: café
module @m {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    func.return %x : tensor<2xf32>
  }
}
