// `--run` on XLA:CPU of a module lowered without cpu-crop-negative-padding: where XLA:CPU
// computes a conv with negative low and positive high padding from memory outside its input
// (openxla/xla#48713; the lit feature xla-cpu-misreads-negative-padding, measured by convc's
// probe), convc runs a copy cropped by that pass and warns once on stderr; elsewhere it runs
// the module as emitted, silently. Either way it emits the module the target asked for.
// `--platform cpu`: the same on a machine with a GPU.

// --target generic: one located warning (or, without the bug, nothing) on stderr; --check
// agrees with jax.lax (exit 0); the emitted module still holds the negative pad, and no slice.
// RUN: convc %s --target generic --check --platform cpu -o %t.generic.mlir 2> %t.err | filecheck %s --check-prefix=RESULTS
// RUN: filecheck %s --input-file %t.err --allow-empty --check-prefix=%if xla-cpu-misreads-negative-padding %{WARN%} %else %{SILENT%}
// SILENT-NOT: {{.}}
// RUN: filecheck %s --input-file %t.generic.mlir --check-prefix=EMITTED
// WARN: {{^}}{{.*}}run-on-xla-cpu.mlir:[[# @LINE + 31]]:5: warning: 'c1' (conv): running a cropped copy on XLA:CPU, which misreads negative low + positive high padding (openxla/xla#48713); the emitted --target generic module is unchanged{{$}}
// WARN-NOT: {{.}}
// RESULTS: {{^}}c1: [1, 15, 2, 8] f32 sum={{\S+}} crc32={{[0-9a-f]+}}{{$}}
// RESULTS-NEXT: {{^}}c1: max abs error vs jax.lax {{\S+}} (ok){{$}}
// EMITTED: stablehlo.convolution(%x, %w)
// EMITTED-SAME: pad = {{\[\[}}0, 0], [-5, 1]]
// EMITTED-NOT: stablehlo.slice

// --target gpu names its target.
// RUN: convc %s --target gpu --run --platform cpu 2> %t.gpu.err
// RUN: filecheck %s --input-file %t.gpu.err --check-prefix=%if xla-cpu-misreads-negative-padding %{GPU%} %else %{GPUFIXED%}
// GPU: warning: 'c1' (conv): {{.*}} the emitted --target gpu module is unchanged{{$}}
// Without the bug: only the line saying the gpu module runs on the cpu platform.
// GPUFIXED-NOT: cropped copy
// GPUFIXED: {{^}}convc: warning: --run executes the --target gpu module on PJRT platform cpu{{.*$}}
// GPUFIXED-NOT: {{.}}

// --target cpu crops at compile time: no warning, one run line (exit status merges stderr).
// RUN: %exit-status convc %s --target cpu --run --platform cpu | filecheck %s --check-prefix=CPU
// CPU-NOT: warning
// CPU: {{^}}c1: [1, 15, 2, 8] f32 sum=
// CPU-NEXT: {{^}}exit status: 0, output lines: 1{{$}}

// A model without such a conv runs under --target generic without a word.
// RUN: %exit-status convc %S/inputs/depthwise.json --target generic --run --platform cpu | filecheck %s --check-prefix=QUIET
// QUIET-NOT: warning
// QUIET: {{^}}dw: [2, 8, 6, 3] f32 sum=
// QUIET-NEXT: {{^}}exit status: 0, output lines: 1{{$}}

module @crop_low_pad_high {
  func.func @main(%x: tensor<1x15x6x8xf32>, %w: tensor<1x1x8x8xf32>) -> tensor<1x15x2x8xf32> {
    %c1 = "convc.conv"(%x, %w) {dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = dense<[[0, 0], [-5, 1]]> : tensor<2x2xi64>} : (tensor<1x15x6x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x15x2x8xf32>
    func.return %c1 : tensor<1x15x2x8xf32>
  }
}

// The --check oracle hands XLA:CPU no such conv either. jax.vjp of a forward conv and
// lax.conv_transpose build their own convs: an input gradient of forward pads (2, -1), a
// kernel gradient of (-2, 1) and a transposed conv of (-2, 1) (all 1x1) once put (-2, 1)
// on them, and --check reported MISMATCH (exit 1) on every target. Now all agree (exit 0);
// under --target generic after the one warning about convc's own module.
// RUN: %exit-status convc %S/inputs/gradient-crop-pads.json --target cpu --check --platform cpu | filecheck %s --check-prefix=ORACLE
// RUN: %exit-status convc %S/inputs/gradient-crop-pads.json --target generic --check --platform cpu | filecheck %s --check-prefix=ORACLE
// ORACLE-NOT: MISMATCH
// ORACLE: {{^}}dx: max abs error vs jax.lax {{\S+}} (ok){{$}}
// ORACLE-NEXT: {{^}}dw: max abs error vs jax.lax {{\S+}} (ok){{$}}
// ORACLE-NEXT: {{^}}t: max abs error vs jax.lax {{\S+}} (ok){{$}}
// ORACLE-NEXT: {{^}}exit status: 0, output lines: {{6|7}}{{$}}
