// RUN: convc-opt %s --split-input-file --verify-diagnostics
// RUN: %exit-status convc-opt %s --split-input-file | filecheck %s --check-prefix=STATUS

// One case per diagnostic of the elementwise ops (compiler/ops/elementwise.py), each a
// single line located at the op. The whole file exits 1 with exactly those lines.
// STATUS-NOT: Traceback
// STATUS-COUNT-14: {{^}}{{.*}}verify-elementwise.mlir:{{[0-9]+}}:5: error: 'r' ({{[a-z_]+}}): {{.*}}
// STATUS-NEXT: {{^}}exit status: 1, output lines: 14{{$}}

// subtract: both operands have one type.
module @subtract_types_differ {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (subtract): operand types differ: tensor<4xf32> and tensor<4xf16> [subtract.C1]}}
    %r = "convc.subtract"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// divide: both operands have one type.
module @divide_types_differ {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (divide): operand types differ: tensor<4xf32> and tensor<4xf16> [divide.C1]}}
    %r = "convc.divide"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// maximum: both operands have one type.
module @maximum_types_differ {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (maximum): operand types differ: tensor<4xf32> and tensor<4xf16> [maximum.C1]}}
    %r = "convc.maximum"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// minimum: both operands have one type.
module @minimum_types_differ {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (minimum): operand types differ: tensor<4xf32> and tensor<4xf16> [minimum.C1]}}
    %r = "convc.minimum"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// power: both operands have one type.
module @power_types_differ {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
    // expected-error@+1 {{'r' (power): operand types differ: tensor<4xf32> and tensor<4xf16> [power.C1]}}
    %r = "convc.power"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}

// -----

// power: floating operands only.
module @power_integer {
  func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (power): power needs a floating element type, got i32 [power.C2]}}
    %r = "convc.power"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// exp: a floating operand only.
module @exp_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (exp): exp needs a floating element type, got i32 [exp.C1]}}
    %r = "convc.exp"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// log: a floating operand only.
module @log_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (log): log needs a floating element type, got i32 [log.C1]}}
    %r = "convc.log"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// tanh: a floating operand only.
module @tanh_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (tanh): tanh needs a floating element type, got i32 [tanh.C1]}}
    %r = "convc.tanh"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// logistic: a floating operand only.
module @logistic_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (logistic): logistic needs a floating element type, got i32 [logistic.C1]}}
    %r = "convc.logistic"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// sqrt: a floating operand only.
module @sqrt_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (sqrt): sqrt needs a floating element type, got i32 [sqrt.C1]}}
    %r = "convc.sqrt"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// rsqrt: a floating operand only.
module @rsqrt_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (rsqrt): rsqrt needs a floating element type, got i32 [rsqrt.C1]}}
    %r = "convc.rsqrt"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// clamp: a floating operand only.
module @clamp_integer {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (clamp): clamp needs a floating element type, got i32 [clamp.C1]}}
    %r = "convc.clamp"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}

// -----

// erf: a floating element type.
module @erf_i32 {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    // expected-error@+1 {{'r' (erf): erf needs a floating element type, got i32 [erf.C1]}}
    %r = "convc.erf"(%a) : (tensor<4xi32>) -> tensor<4xi32>
    func.return %r : tensor<4xi32>
  }
}
