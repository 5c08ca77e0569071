// RUN: convc %s --target generic | filecheck %s --check-prefix=INLINE
// RUN: convc %s --target generic --weights-as-inputs --weights-file %t.npz | filecheck %s --check-prefix=ARGS
// RUN: convc %s --target generic --weights-as-inputs --weights-larger 3 --weights-file %t.npz | filecheck %s --check-prefix=SMALL

// --weights-as-inputs: a constant of more than --weights-larger elements (default 16,
// the ones otherwise written as a hex blob) becomes a leading argument of @main, located
// by its name; small constants and splats of any size stay dense<...> constants.

// Without the flag every constant is in the module: the large one as a hex blob.
// INLINE-LABEL: module @weights
// INLINE: func.func public @main(%[[X:[^:]+]]: tensor<20xf32> loc("x"))
// INLINE-DAG: stablehlo.constant dense<"0x0000000000
// INLINE-DAG: stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> loc("small")
// INLINE-DAG: stablehlo.constant dense<5.0> : tensor<20xf32> loc("splat")

// The large constant is the first argument; the graph's input follows it.
// ARGS-LABEL: module @weights
// ARGS: func.func public @main(%[[W:[^:]+]]: tensor<20xf32> loc("large"), %[[X:[^:]+]]: tensor<20xf32> loc("x"))
// ARGS-NOT: "0x
// ARGS: stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> loc("small")
// ARGS: stablehlo.constant dense<5.0> : tensor<20xf32> loc("splat")
// ARGS: stablehlo.add %[[X]], %[[W]] : tensor<20xf32>
// ARGS-NOT: stablehlo.constant

// --weights-larger 3: the 4-element constant is an argument too, after the large one
// (arguments follow the constants' order in the graph).
// SMALL-LABEL: module @weights
// SMALL: func.func public @main(%{{[^:]+}}: tensor<20xf32> loc("large"), %{{[^:]+}}: tensor<4xf32> loc("small"), %{{[^:]+}}: tensor<20xf32> loc("x"))
// SMALL: stablehlo.constant dense<5.0> : tensor<20xf32> loc("splat")
module @weights {
  func.func @main(%x: tensor<20xf32>) -> (tensor<20xf32>, tensor<4xf32>) {
    %large = "convc.constant"() {value = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]> : tensor<20xf32>} : () -> tensor<20xf32>
    %small = "convc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %splat = "convc.constant"() {value = dense<5.0> : tensor<20xf32>} : () -> tensor<20xf32>
    %sum = "convc.add"(%x, %large) : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
    %y = "convc.multiply"(%sum, %splat) : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
    %s = "convc.multiply"(%small, %small) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %y, %s : tensor<20xf32>, tensor<4xf32>
  }
}
