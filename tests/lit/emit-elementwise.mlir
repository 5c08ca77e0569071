// RUN: convc-opt %s --split-input-file --emit=stablehlo | filecheck %s

// The elementwise ops' emitter rules (compiler/ops/elementwise.py names each StableHLO op).

// binary ops: one StableHLO op each, on operands of one type.
// CHECK-LABEL: module @binary
// CHECK: func.func public @main(%[[A:[^:]+]]: tensor<2x3xf32> loc("a"), %[[B:[^:]+]]: tensor<2x3xf32> loc("b"))
// CHECK-NEXT: %[[D:[^ ]+]] = stablehlo.subtract %[[A]], %[[B]] : tensor<2x3xf32> loc("d")
// CHECK-NEXT: %[[Q:[^ ]+]] = stablehlo.divide %[[D]], %[[B]] : tensor<2x3xf32> loc("q")
// CHECK-NEXT: %[[HI:[^ ]+]] = stablehlo.maximum %[[Q]], %[[A]] : tensor<2x3xf32> loc("hi")
// CHECK-NEXT: %[[LO:[^ ]+]] = stablehlo.minimum %[[HI]], %[[B]] : tensor<2x3xf32> loc("lo")
// CHECK-NEXT: %[[P:[^ ]+]] = stablehlo.power %[[LO]], %[[A]] : tensor<2x3xf32> loc("p")
// CHECK-NEXT: return %[[P]]
module @binary {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %d = "convc.subtract"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %q = "convc.divide"(%d, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %hi = "convc.maximum"(%q, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %lo = "convc.minimum"(%hi, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %p = "convc.power"(%lo, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %p : tensor<2x3xf32>
  }
}

// -----

// unary ops: one StableHLO op each (exp is stablehlo.exponential).
// CHECK-LABEL: module @unary
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<4xf16> loc("x"))
// CHECK-NEXT: %[[E:[^ ]+]] = stablehlo.exponential %[[X]] : tensor<4xf16> loc("e")
// CHECK-NEXT: %[[L:[^ ]+]] = stablehlo.log %[[E]] : tensor<4xf16> loc("l")
// CHECK-NEXT: %[[T:[^ ]+]] = stablehlo.tanh %[[L]] : tensor<4xf16> loc("t")
// CHECK-NEXT: %[[S:[^ ]+]] = stablehlo.logistic %[[T]] : tensor<4xf16> loc("s")
// CHECK-NEXT: %[[R:[^ ]+]] = stablehlo.sqrt %[[S]] : tensor<4xf16> loc("r")
// CHECK-NEXT: %[[RR:[^ ]+]] = stablehlo.rsqrt %[[R]] : tensor<4xf16> loc("rr")
// CHECK-NEXT: %[[N:[^ ]+]] = stablehlo.negate %[[RR]] : tensor<4xf16> loc("n")
// CHECK-NEXT: %[[M:[^ ]+]] = stablehlo.abs %[[N]] : tensor<4xf16> loc("m")
// CHECK-NEXT: return %[[M]]
module @unary {
  func.func @main(%x: tensor<4xf16>) -> tensor<4xf16> {
    %e = "convc.exp"(%x) : (tensor<4xf16>) -> tensor<4xf16>
    %l = "convc.log"(%e) : (tensor<4xf16>) -> tensor<4xf16>
    %t = "convc.tanh"(%l) : (tensor<4xf16>) -> tensor<4xf16>
    %s = "convc.logistic"(%t) : (tensor<4xf16>) -> tensor<4xf16>
    %r = "convc.sqrt"(%s) : (tensor<4xf16>) -> tensor<4xf16>
    %rr = "convc.rsqrt"(%r) : (tensor<4xf16>) -> tensor<4xf16>
    %n = "convc.negate"(%rr) : (tensor<4xf16>) -> tensor<4xf16>
    %m = "convc.abs"(%n) : (tensor<4xf16>) -> tensor<4xf16>
    func.return %m : tensor<4xf16>
  }
}

// -----

// optimization_barrier: the identity, emitted as StableHLO's op of one operand, of any type.
// CHECK-LABEL: module @optimization_barrier
// CHECK: func.func public @main(%[[X:[^:]+]]: tensor<2x3xi8> loc("x"))
// CHECK-NEXT: %[[B:[^ ]+]] = stablehlo.optimization_barrier %[[X]] : tensor<2x3xi8> loc("b")
// CHECK-NEXT: return %[[B]]
module @optimization_barrier {
  func.func @main(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
    %b = "convc.optimization_barrier"(%x) : (tensor<2x3xi8>) -> tensor<2x3xi8>
    func.return %b : tensor<2x3xi8>
  }
}

// -----

// clamp: its bounds become splat constants; an absent min is -inf (as hex: no decimal spells it).
// CHECK-LABEL: module @clamp
// CHECK: %[[LO:[^ ]+]] = stablehlo.constant dense<0.0> : tensor<f32> loc("c")
// CHECK-NEXT: %[[LOS:[^ ]+]] = stablehlo.broadcast_in_dim %[[LO]], dims = [] : (tensor<f32>) -> tensor<4xf32> loc("c")
// CHECK-NEXT: %[[HI:[^ ]+]] = stablehlo.constant dense<6.0> : tensor<f32> loc("c")
// CHECK-NEXT: %[[HIS:[^ ]+]] = stablehlo.broadcast_in_dim %[[HI]], dims = [] : (tensor<f32>) -> tensor<4xf32> loc("c")
// CHECK-NEXT: %[[C:[^ ]+]] = stablehlo.clamp %[[LOS]], %[[X:[^,]+]], %[[HIS]] : tensor<4xf32> loc("c")
// CHECK-NEXT: %[[NEG:[^ ]+]] = stablehlo.constant dense<"0x000080FF"> : tensor<f32> loc("h")
// CHECK: %[[H:[^ ]+]] = stablehlo.clamp %{{[^,]+}}, %[[X]], %{{[^ ]+}} : tensor<4xf32> loc("h")
// CHECK-NEXT: return %[[C]], %[[H]]
module @clamp {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %c = "convc.clamp"(%x) {min = 0.0 : f64, max = 6.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
    %h = "convc.clamp"(%x) {max = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
    func.return %c, %h : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// erf: no StableHLO op (chlo.erf is not StableHLO): XLA's f32 rational approximation,
// x * P(x^2) / Q(x^2), and sign(x) past the saturation point; f16 goes through f32.
// CHECK-LABEL: module @erf
// CHECK: %[[X32:[^ ]+]] = stablehlo.convert %[[X:[^ ]+]] : (tensor<4xf16>) -> tensor<4xf32> loc("y")
// CHECK-NEXT: %[[X2:[^ ]+]] = stablehlo.multiply %[[X32]], %[[X32]] : tensor<4xf32>
// CHECK-NEXT: stablehlo.constant dense<0.00022905065270606428> : tensor<f32>
// CHECK: stablehlo.constant dense<1.1283791065216064> : tensor<f32>
// CHECK: stablehlo.constant dense<-1.1791603071742429e-07> : tensor<f32>
// CHECK: stablehlo.constant dense<1.0> : tensor<f32>
// CHECK: %[[XP:[^ ]+]] = stablehlo.multiply %[[X32]], %{{[^ ]+}} : tensor<4xf32>
// CHECK-NEXT: %[[RATIO:[^ ]+]] = stablehlo.divide %[[XP]], %{{[^ ]+}} : tensor<4xf32>
// CHECK-NEXT: %[[ABS:[^ ]+]] = stablehlo.abs %[[X32]] : tensor<4xf32>
// CHECK-NEXT: %[[LIM:[^ ]+]] = stablehlo.constant dense<3.8325068950653076> : tensor<f32>
// CHECK-NEXT: %[[LIMS:[^ ]+]] = stablehlo.broadcast_in_dim %[[LIM]]
// CHECK-NEXT: %[[SAT:[^ ]+]] = stablehlo.compare GE, %[[ABS]], %[[LIMS]], FLOAT
// CHECK-NEXT: %[[SIGN:[^ ]+]] = stablehlo.sign %[[X32]] : tensor<4xf32>
// CHECK-NEXT: %[[WIDE:[^ ]+]] = stablehlo.select %[[SAT]], %[[SIGN]], %[[RATIO]]
// CHECK-NEXT: %[[Y:[^ ]+]] = stablehlo.convert %[[WIDE]] : (tensor<4xf32>) -> tensor<4xf16> loc("y")
// CHECK-NEXT: return %[[Y]]
module @erf {
  func.func @main(%x: tensor<4xf16>) -> tensor<4xf16> {
    %y = "convc.erf"(%x) : (tensor<4xf16>) -> tensor<4xf16>
    func.return %y : tensor<4xf16>
  }
}

// -----

// erf of f64: Cephes' expansion in f64, no convert: x * T(x^2) / U(x^2) below |x| = 1, else
// 1 - erfc(x), erfc from exp(-x^2) times P/Q (|x| < 8) or R/S, 0 past the largest log, 2 - it below 0.
// CHECK-LABEL: module @erf_f64
// CHECK: %[[X2:[^ ]+]] = stablehlo.multiply %[[X:[^ ,]+]], %[[X]] : tensor<4xf64> loc("y")
// CHECK-NEXT: stablehlo.constant dense<9.604973739870516> : tensor<f64>
// CHECK-NOT: stablehlo.convert
// CHECK: %[[T:[^ ]+]] = stablehlo.divide %{{[^ ]+}}, %{{[^ ]+}} : tensor<4xf64>
// CHECK-NEXT: %[[NEAR:[^ ]+]] = stablehlo.multiply %[[X]], %[[T]] : tensor<4xf64>
// CHECK-NEXT: %[[ABS:[^ ]+]] = stablehlo.abs %[[X]] : tensor<4xf64>
// CHECK-NEXT: %[[NEG:[^ ]+]] = stablehlo.negate %[[X2]] : tensor<4xf64>
// CHECK-NEXT: %[[DECAY:[^ ]+]] = stablehlo.exponential %[[NEG]] : tensor<4xf64>
// CHECK: stablehlo.constant dense<557.5353408177277> : tensor<f64>
// CHECK: %[[MIDDLE:[^ ]+]] = stablehlo.multiply %[[DECAY]], %{{[^ ]+}} : tensor<4xf64>
// CHECK: stablehlo.constant dense<3.369076451000815> : tensor<f64>
// CHECK: %[[TAIL:[^ ]+]] = stablehlo.multiply %[[DECAY]], %{{[^ ]+}} : tensor<4xf64>
// CHECK: %[[BELOW8:[^ ]+]] = stablehlo.compare LT, %[[ABS]], %{{[^ ]+}}, FLOAT
// CHECK-NEXT: %[[ERFC:[^ ]+]] = stablehlo.select %[[BELOW8]], %[[MIDDLE]], %[[TAIL]]
// CHECK: stablehlo.constant dense<709.782712893384> : tensor<f64>
// CHECK: %[[UNDER:[^ ]+]] = stablehlo.compare LT, %{{[^ ]+}}, %[[X2]], FLOAT
// CHECK-NEXT: %[[CLAMPED:[^ ]+]] = stablehlo.select %[[UNDER]], %{{[^ ]+}}, %[[ERFC]]
// CHECK: %[[REFLECTED:[^ ]+]] = stablehlo.subtract %{{[^ ]+}}, %[[CLAMPED]] : tensor<4xf64>
// CHECK-NEXT: %[[NEGATIVE:[^ ]+]] = stablehlo.compare LT, %[[X]], %{{[^ ]+}}, FLOAT
// CHECK-NEXT: %[[SIGNED:[^ ]+]] = stablehlo.select %[[NEGATIVE]], %[[REFLECTED]], %[[CLAMPED]]
// CHECK-NEXT: %[[FAR:[^ ]+]] = stablehlo.subtract %{{[^ ]+}}, %[[SIGNED]] : tensor<4xf64>
// CHECK-NEXT: %[[BELOW1:[^ ]+]] = stablehlo.compare LT, %[[ABS]], %{{[^ ]+}}, FLOAT
// CHECK-NEXT: %[[Y:[^ ]+]] = stablehlo.select %[[BELOW1]], %[[NEAR]], %[[FAR]] : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64> loc("y")
// CHECK-NEXT: return %[[Y]]
module @erf_f64 {
  func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {
    %y = "convc.erf"(%x) : (tensor<4xf64>) -> tensor<4xf64>
    func.return %y : tensor<4xf64>
  }
}
