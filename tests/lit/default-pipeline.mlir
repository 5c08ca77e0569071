// RUN: convc-opt %s --default-pipeline generic | filecheck %s --check-prefix=GENERIC
// RUN: convc-opt %s --default-pipeline cpu | filecheck %s --check-prefix=CPU
// RUN: convc-opt %s --default-pipeline cpu --emit=stablehlo | filecheck %s --check-prefix=CPU-HLO
// RUN: not convc-opt %s --default-pipeline cpu -p dce 2>&1 | filecheck %s --check-prefix=EXCLUSIVE

// `--default-pipeline T` runs what `convc --target T` runs, so a rewrite can be seen
// in its full context. A 1x1 conv stays a conv for the generic target and becomes a
// dot_general for the cpu target.

// GENERIC-LABEL: module @pointwise
// GENERIC: %[[C:[^ ]+]] = "convc.conv"
// GENERIC-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>
// GENERIC-SAME: padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>
// GENERIC-NOT: convc.dot_general

// CPU-LABEL: module @pointwise
// CPU-NOT: "convc.conv"
// CPU: "convc.dot_general"
// CPU-NOT: "convc.conv"

// CPU-HLO-LABEL: module @pointwise
// CPU-HLO: stablehlo.dot_general
// CPU-HLO-NOT: stablehlo.convolution

// EXCLUSIVE: convc-opt: error: --default-pipeline and -p are exclusive
module @pointwise {
  func.func @main(%x: tensor<1x8x8x16xf32>, %w: tensor<1x1x16x4xf32>) -> tensor<1x8x8x4xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<1x8x8x16xf32>, tensor<1x1x16x4xf32>) -> tensor<1x8x8x4xf32>
    func.return %c : tensor<1x8x8x4xf32>
  }
}
