// RUN: convc-opt %s -p infer-shapes,resolve-padding,dce --timing -o %t 2>&1 | filecheck %s
// RUN: convc %s -p infer-shapes,resolve-padding,dce --timing --emit=convc -o %t 2>&1 | filecheck %s
// RUN: convc-opt %S/inputs/two-chunks.mlir --split-input-file -p infer-shapes,dce --timing -o %t 2>&1 | filecheck %s --check-prefix=SPLIT

// --timing prints, on stderr, the total and one line per phase, in order (as mlir-opt
// --mlir-timing): wall time, share of the total, phase; each pass indented under the pass
// phase. Times vary, so only their form is checked. With -p, no platform lookup is needed.

// CHECK: {{^}}===- Execution timing report -==={{$}}
// CHECK-NEXT: {{^ +}}Total: {{[0-9]+\.[0-9]+}} ms{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  load (parse + verify){{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  passes (with the verifier after each){{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)    infer-shapes{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)    resolve-padding{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)    dce{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  print{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  write{{$}}
// CHECK-NOT: {{.}}

// convc --run adds StableHLO emission, the import of jaxlib (the first use of MLIR or
// PJRT), MLIR's verifier, PJRT's compile and run, and the write of -o, in the order they ran.
// With -o the module is emitted twice: the text to write, then the form a run compiles
// (its large constants bound from their arrays: Compiler.runnable).
// RUN: convc %s -p canonicalize-dimension-numbers,resolve-padding,dce --timing --run --platform cpu -o %t 2>&1 >/dev/null | filecheck %s --check-prefix=EXEC
// EXEC-LABEL: Execution timing report
// EXEC: load (parse + verify)
// EXEC-NEXT: passes
// EXEC: dce{{$}}
// EXEC-NEXT: emit stablehlo{{$}}
// EXEC-NEXT: import jaxlib (MLIR, JAX){{$}}
// EXEC-NEXT: mlir verify{{$}}
// EXEC-NEXT: inputs{{$}}
// EXEC-NEXT: emit stablehlo{{$}}
// EXEC-NEXT: import jaxlib (MLIR, JAX){{$}}
// EXEC-NEXT: mlir verify + bind weights{{$}}
// EXEC-NEXT: pjrt compile{{$}}
// EXEC-NEXT: pjrt run{{$}}
// EXEC-NEXT: write{{$}}
// EXEC-NOT: {{.}}

// --weights-as-inputs: the weights are packed into an .npz, written before the module.
// RUN: convc %s -p canonicalize-dimension-numbers,resolve-padding,dce --timing --weights-as-inputs --weights-file %t.npz -o %t 2>&1 | filecheck %s --check-prefix=WEIGHTS
// WEIGHTS-LABEL: Execution timing report
// WEIGHTS: emit stablehlo{{$}}
// WEIGHTS-NEXT: import jaxlib (MLIR, JAX){{$}}
// WEIGHTS-NEXT: mlir verify{{$}}
// WEIGHTS-NEXT: pack weights (.npz){{$}}
// WEIGHTS-NEXT: write weights{{$}}
// WEIGHTS-NEXT: write{{$}}
// WEIGHTS-NOT: {{.}}

// With --split-input-file (two chunks), one report after all chunks, listing each chunk's phases.
// SPLIT: {{^}}===- Execution timing report -==={{$}}
// SPLIT-NEXT: Total:
// SPLIT-NEXT: load
// SPLIT-NEXT: passes
// SPLIT-NEXT: infer-shapes{{$}}
// SPLIT-NEXT: dce{{$}}
// SPLIT-NEXT: print{{$}}
// SPLIT-NEXT: load
// SPLIT-NEXT: passes
// SPLIT-NEXT: infer-shapes{{$}}
// SPLIT-NEXT: dce{{$}}
// SPLIT-NEXT: print{{$}}
// SPLIT-NEXT: write{{$}}
// SPLIT-NOT: {{.}}

module @first {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}
