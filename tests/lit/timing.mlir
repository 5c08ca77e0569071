// RUN: convc-opt %s -p infer-shapes,resolve-padding,dce --timing -o %t 2>&1 | filecheck %s
// RUN: convc %s -p infer-shapes,resolve-padding,dce --timing --emit=convc -o %t 2>&1 | filecheck %s
// RUN: convc-opt %S/inputs/two-chunks.mlir --split-input-file -p infer-shapes,dce --timing -o %t 2>&1 | filecheck %s --check-prefix=SPLIT

// --timing prints, on stderr, the total and one line per pass run, in pipeline order:
// wall time, share of the total, pass name. Times vary, so only their form is checked.

// CHECK: {{^}}===- Pass execution timing report -==={{$}}
// CHECK-NEXT: {{^ +}}Total: {{[0-9]+\.[0-9]+}} ms{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  infer-shapes{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  resolve-padding{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9]+}} ms ({{ *[0-9]+\.[0-9]}}%)  dce{{$}}
// CHECK-NOT: {{.}}

// With --split-input-file (two chunks), one report after all chunks, listing each chunk's passes.
// SPLIT: {{^}}===- Pass execution timing report -==={{$}}
// SPLIT-NEXT: Total:
// SPLIT-NEXT: infer-shapes{{$}}
// SPLIT-NEXT: dce{{$}}
// SPLIT-NEXT: infer-shapes{{$}}
// SPLIT-NEXT: dce{{$}}
// SPLIT-NOT: {{.}}

module @first {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {padding = "SAME"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}
