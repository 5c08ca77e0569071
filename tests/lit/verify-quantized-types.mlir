// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per rule of the StableHLO spec's quantized element and tensor types
// (quant.C1..C13; C9 cannot be broken in the text, each parameter pairs a scale with a
// zero point), and Q1: only the ops that declare it take quantized operands.
// STATUS-NOT: Traceback
// STATUS-COUNT-13: {{^}}{{.*}}verify-quantized-types.mlir:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 13{{$}}

module @storage_min_type {
  // expected-error@+1 {{storage_min -200 is outside the i8 range [-128, 127] [quant.C1]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8<-200:127>:f32, 1.0>>) -> tensor<4x!quant.uniform<i8<-200:127>:f32, 1.0>> {
    func.return %x : tensor<4x!quant.uniform<i8<-200:127>:f32, 1.0>>
  }
}

// -----

module @storage_max_type {
  // expected-error@+1 {{storage_max 300 is outside the u8 range [0, 255] [quant.C2]}}
  func.func @main(%x: tensor<4x!quant.uniform<u8<0:300>:f32, 1.0>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @storage_min_below_max {
  // expected-error@+1 {{storage_min 5 must be less than storage_max 5 [quant.C3]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8<5:5>:f32, 1.0>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @scale_in_expressed_range {
  // expected-error@+1 {{scale 1e+10 is outside the f16 range [quant.C4]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8:f16, 1.0e10>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @scale_positive {
  // expected-error@+1 {{scale -0.5 must be positive [quant.C5]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8:f32, -0.5>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @scale_finite {
  // expected-error@+1 {{scale nan is not finite [quant.C6]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8:f32, nan>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @zero_point_in_storage_limits {
  // expected-error@+1 {{zero point 20 lies outside [storage_min, storage_max] = [-10, 10] [quant.C7]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8<-10:10>:f32, 0.5:20>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @zero_point_storage_type {
  // expected-error@+1 {{zero point 200 is outside the i8 range [-128, 127] [quant.C8]}}
  func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5:200>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @per_tensor_one_scale {
  // expected-error@+1 {{a per-tensor quantized type has one scale, got 2 (per-axis types name a quantization dimension: !quant.uniform<i8:f32:0, {...}>) [quant.C10]}}
  func.func @main(%x: tensor<2x!quant.uniform<i8:f32, {0.1, 0.2}>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @axis_not_negative {
  // expected-error@+1 {{quantization dimension -1 must not be negative [quant.C11]}}
  func.func @main(%x: tensor<2x!quant.uniform<i8:f32:-1, {0.1, 0.2}>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @axis_in_rank {
  // expected-error@+1 {{quantization dimension 1 is out of range for a rank-1 tensor [quant.C12]}}
  func.func @main(%x: tensor<2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @axis_size_is_scale_count {
  // expected-error@+1 {{dimension 0 has size 3 but the type has 2 scales [quant.C13]}}
  func.func @main(%x: tensor<3x!quant.uniform<i8:f32:0, {0.1, 0.2}>>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// -----

module @only_quantized_ops_take_quantized_operands {
  func.func @main(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>> {
    // expected-error@+1 {{'r' (relu): 'relu' does not take quantized operands (operand 0 is tensor<4x!quant.uniform<i8:f32, 5.000000e-01>>); uniform_dequantize it first [Q1]}}
    %r = "convc.relu"(%x) : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
    func.return %r : tensor<4x!quant.uniform<i8:f32, 0.5>>
  }
}
