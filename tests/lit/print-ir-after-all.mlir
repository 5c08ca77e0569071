// RUN: convc-opt %s -p canonicalize-dimension-numbers,resolve-padding,dce --print-ir-after-all -o %t 2>&1 | filecheck %s
// RUN: convc %s -p canonicalize-dimension-numbers,resolve-padding,dce --print-ir-after-all --emit=convc -o %t 2>&1 | filecheck %s
// RUN: convc-opt %s -p "cpu-depthwise-tap-sum{max_terms=8}" --print-ir-after-all -o %t 2>&1 | filecheck %s --check-prefix=OPTIONS

// --print-ir-after-all prints the whole module to stderr after every pass, under an
// MLIR-style header naming the pass; the result itself still goes to -o. Each dump
// shows exactly one more pass's change.

// After canonicalize-dimension-numbers: explicit numbers, padding still "SAME", the dead relu still there.
// CHECK: {{^}}// -----// IR Dump After canonicalize-dimension-numbers //----- //{{$}}
// CHECK-NEXT: {{^}}module @dump {
// CHECK: "convc.conv"
// CHECK-SAME: dimension_numbers = #convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, padding = "SAME"
// CHECK-NEXT: "convc.relu"
// CHECK: {{^}}}{{$}}

// After resolve-padding: explicit pads; the relu is still there.
// CHECK: {{^}}// -----// IR Dump After resolve-padding //----- //{{$}}
// CHECK-NEXT: {{^}}module @dump {
// CHECK: "convc.conv"
// CHECK-SAME: padding = dense<{{\[\[}}1, 1], [1, 1]]> : tensor<2x2xi64>
// CHECK-NEXT: "convc.relu"
// CHECK: {{^}}}{{$}}

// After dce: the unused relu is gone.
// CHECK: {{^}}// -----// IR Dump After dce //----- //{{$}}
// CHECK-NEXT: {{^}}module @dump {
// CHECK: "convc.conv"
// CHECK-NOT: "convc.relu"
// CHECK: func.return
// CHECK-NOT: IR Dump After

// A pass with options is named with them, as pipeline text that parses back.
// OPTIONS: {{^}}// -----// IR Dump After cpu-depthwise-tap-sum{max_terms=8} //----- //{{$}}

module @dump {
  func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32> {
    %c = "convc.conv"(%x, %w) {dimension_numbers = ["NHWC", "HWIO", "NHWC"], padding = "SAME"} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32>
    %unused = "convc.relu"(%c) : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    func.return %c : tensor<1x8x8x8xf32>
  }
}
