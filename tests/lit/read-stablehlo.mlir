// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: convc %S/../../examples/resnet_block.json --target generic -o %t.mlir
// RUN: %exit-status convc %t.mlir | filecheck %s --check-prefix=FED-BACK
// RUN: %exit-status convc-opt %t.mlir -p dce | filecheck %s --check-prefix=FED-BACK

// StableHLO, convc's own output, is not convc's input: instead of the first token the
// convc reader cannot read, one located line says what the text is [X11], at its first op
// in StableHLO's pretty form, else (generic ops only, or none) at the result names
// (`jax.result_info`) JAX and convc write on every module.
// FED-BACK-NOT: Traceback
// FED-BACK: {{^}}{{.*}}.mlir:3:{{[0-9]+}}: error: this is StableHLO (MLIR, as convc emits it), not a convc model: convc reads JSON models and convc IR (what --emit convc writes) [X11]{{$}}
// FED-BACK-NEXT: {{^}}exit status: 1, output lines: 1{{$}}

module @pretty {
  func.func public @main(%x: tensor<3xf32> loc("x")) -> (tensor<3xf32> {jax.result_info = "y"}) {
    // expected-error@+1 {{this is StableHLO (MLIR, as convc emits it), not a convc model: convc reads JSON models and convc IR (what --emit convc writes) [X11]}}
    %y = stablehlo.add %x, %x : tensor<3xf32> loc("y")
    return %y : tensor<3xf32>
  }
}

// -----

module @generic {
  // expected-error@+1 {{this is StableHLO (MLIR, as convc emits it), not a convc model: convc reads JSON models and convc IR (what --emit convc writes) [X11]}}
  func.func public @main(%x: tensor<3xf32> loc("x")) -> (tensor<3xf32> {jax.result_info = "y"}) {
    %y = "stablehlo.negate"(%x) : (tensor<3xf32>) -> tensor<3xf32> loc("y")
    return %y : tensor<3xf32>
  }
}

// -----

module @no_ops {
  // expected-error@+1 {{this is StableHLO (MLIR, as convc emits it), not a convc model: convc reads JSON models and convc IR (what --emit convc writes) [X11]}}
  func.func public @main(%x: tensor<3xf32> loc("x")) -> (tensor<3xf32> {jax.result_info = "x"}) {
    return %x : tensor<3xf32>
  }
}
