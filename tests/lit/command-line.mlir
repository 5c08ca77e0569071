// Exit codes and messages of convc and convc-opt themselves: 2 for a usage error
// (bad pipeline, flag or choice), 1 for a user error in the input, each one line
// (argparse errors also print the usage). This file is a valid model; every failure
// below comes from the command line.

// An unknown pass; nothing is close enough to suggest.
// RUN: %exit-status convc-opt %s -p nosuch | filecheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS-NOT: Traceback
// UNKNOWN-PASS: {{^}}convc-opt: error: unknown pass 'nosuch'{{$}}
// UNKNOWN-PASS-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// A misspelt pass, with the closest registered name suggested.
// RUN: %exit-status convc-opt %s -p infer-shape,dce | filecheck %s --check-prefix=DID-YOU-MEAN
// DID-YOU-MEAN: {{^}}convc-opt: error: unknown pass 'infer-shape' (did you mean 'infer-shapes'?){{$}}
// DID-YOU-MEAN-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// convc checks its -p pipeline the same way.
// RUN: %exit-status convc %s -p resolve-paddings | filecheck %s --check-prefix=CONVC-PASS
// CONVC-PASS: {{^}}convc: error: unknown pass 'resolve-paddings' (did you mean 'resolve-padding'?){{$}}
// CONVC-PASS-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// The pipeline is checked before the input is read: a bad pipeline on a missing file is still 2.
// RUN: %exit-status convc-opt %S/no-such-file.mlir -p nosuch | filecheck %s --check-prefix=PIPELINE-FIRST
// PIPELINE-FIRST: {{^}}convc-opt: error: unknown pass 'nosuch'{{$}}
// PIPELINE-FIRST-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// Malformed pipeline text (an empty entry).
// RUN: %exit-status convc-opt %s -p "infer-shapes,,dce" | filecheck %s --check-prefix=MALFORMED
// MALFORMED: {{^}}convc-opt: error: malformed pipeline at character 14: ',dce'{{$}}
// MALFORMED-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// An unknown pass option, with the closest option suggested.
// RUN: %exit-status convc-opt %s -p "cpu-depthwise-tap-sum{max_term=3}" | filecheck %s --check-prefix=OPTION
// OPTION: {{^}}convc-opt: error: pass 'cpu-depthwise-tap-sum' has no option 'max_term' (did you mean 'max_terms'?){{$}}
// OPTION-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// A pass option value of the wrong type.
// RUN: %exit-status convc-opt %s -p "cpu-depthwise-tap-sum{max_terms=lots}" | filecheck %s --check-prefix=OPTION-TYPE
// OPTION-TYPE: {{^}}convc-opt: error: pass 'cpu-depthwise-tap-sum': option 'max_terms' expects int, got 'lots'{{$}}
// OPTION-TYPE-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// A pass option without a value.
// RUN: %exit-status convc-opt %s -p "cpu-depthwise-tap-sum{max_terms}" | filecheck %s --check-prefix=OPTION-VALUE
// OPTION-VALUE: {{^}}convc-opt: error: pass 'cpu-depthwise-tap-sum': option 'max_terms' needs a value (key=value){{$}}
// OPTION-VALUE-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// A usage error met while a chunk is compiled (here a pass option naming a platform PJRT
// lacks) stops --split-input-file (and --verify-diagnostics) as it stops one input: exit 2,
// not a chunk's error.
// RUN: %exit-status convc-opt %s --split-input-file -p "canonicalize-dimension-numbers,resolve-padding,autotune-conv-lowering{platform=nosuch}" | filecheck %s --check-prefix=CHUNK-USAGE
// RUN: %exit-status convc-opt %s --split-input-file --verify-diagnostics -p "canonicalize-dimension-numbers,resolve-padding,autotune-conv-lowering{platform=nosuch}" | filecheck %s --check-prefix=CHUNK-USAGE
// CHUNK-USAGE: {{^}}convc-opt: error: pass 'autotune-conv-lowering': no PJRT platform 'nosuch' here ({{.*}}){{$}}
// CHUNK-USAGE-NEXT: {{^}}exit status: 2, output lines: 1{{$}}

// An unknown flag: argparse prints the usage, then one error line.
// RUN: %exit-status convc-opt %s --bogus | filecheck %s --check-prefix=FLAG
// FLAG: {{^}}usage: convc-opt
// FLAG: {{^}}convc-opt: error: unrecognized arguments: --bogus{{$}}
// FLAG-NEXT: {{^}}exit status: 2, output lines: {{[0-9]+}}{{$}}

// A choice outside the allowed set.
// RUN: %exit-status convc %s --emit=llvm | filecheck %s --check-prefix=CHOICE
// CHOICE: {{^}}convc: error: argument --emit: invalid choice: 'llvm' (choose from {{.*}}'stablehlo'{{.*}}){{$}}
// CHOICE-NEXT: {{^}}exit status: 2, output lines: {{[0-9]+}}{{$}}

// A missing input file is a user error (1), not a usage error.
// RUN: %exit-status convc-opt %S/no-such-file.mlir | filecheck %s --check-prefix=MISSING
// RUN: %exit-status convc %S/no-such-file.mlir | filecheck %s --check-prefix=MISSING
// MISSING-NOT: Traceback
// MISSING: {{^}}{{.*}}no-such-file.mlir: error: cannot read input: No such file or directory [I1]{{$}}
// MISSING-NEXT: {{^}}exit status: 1, output lines: 1{{$}}

// StableHLO from convc-opt needs the layouts and pads made explicit first: without
// them it is a located user error naming the passes to run.
// RUN: %exit-status convc-opt %s --emit=stablehlo | filecheck %s --check-prefix=NOT-CANONICAL
// NOT-CANONICAL: {{^}}{{.*}}command-line.mlir:[[# @LINE + 10]]:5: error: 'c' (conv): StableHLO needs explicit dimension numbers and padding; run -p canonicalize-dimension-numbers,resolve-padding first [E1]{{$}}
// NOT-CANONICAL-NEXT: {{^}}exit status: 1, output lines: 1{{$}}

// The same input through those passes succeeds.
// RUN: %exit-status convc-opt %s --emit=stablehlo -p canonicalize-dimension-numbers,resolve-padding | filecheck %s --check-prefix=CANONICAL
// CANONICAL: stablehlo.convolution
// CANONICAL: {{^}}exit status: 0, output lines: {{[0-9]+}}{{$}}

module @command_line {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}
