// RUN: anvil-opt %s --split-input-file --anvil-bufferize --verify-diagnostics

// Tests that anvil-bufferize refuses a GEMM with an epilogue of another
// element type than bf16 (the interpreter's f64, say): the runtime's
// functions, CPU and cuBLASLt, take bf16 buffers.
func.func @f64_linear_gelu(%x: tensor<4x8xf64>, %w: tensor<8x16xf64>, %b: tensor<16xf64>) -> tensor<4x16xf64> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.linear_gelu' of 'f64' is not supported by the runtime's functions (bf16 only)}}
  // expected-error@+1 {{failed to bufferize op}}
  %y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<4x8xf64>, tensor<8x16xf64>, tensor<16xf64>) -> (tensor<4x16xf64>, tensor<4x16xf64>)
  return %y : tensor<4x16xf64>
}

// -----

// Tests that anvil-bufferize refuses a product whose columns are not a
// multiple of 8 (cuBLASLt's rule for the auxiliary matrix; the pass fuses
// no such GEMM).
func.func @twelve_columns(%dy: tensor<4x8xbf16>, %w: tensor<12x8xbf16>, %pre: tensor<4x12xbf16>) -> tensor<4x12xbf16> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.matmul_gelu_bias_grad' with 12 columns: the runtime's GEMM epilogues need a multiple of 8 (cuBLASLt's rule for the GELU's input it keeps, and rows of 16 bytes for every epilogue)}}
  // expected-error@+1 {{failed to bufferize op}}
  %d, %db = anvil.matmul_gelu_bias_grad %dy, %w, %pre {transpose_rhs} : (tensor<4x8xbf16>, tensor<12x8xbf16>, tensor<4x12xbf16>) -> (tensor<4x12xbf16>, tensor<12xbf16>)
  return %d : tensor<4x12xbf16>
}

// -----

// Tests that so does the bias alone (rows of 24 bytes, which not every
// cuBLASLt algorithm takes; the pass fuses no such GEMM either).
func.func @twelve_columns_bias(%x: tensor<4x8xbf16>, %w: tensor<12x8xbf16>, %b: tensor<12xbf16>) -> tensor<4x12xbf16> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.linear' with 12 columns: the runtime's GEMM epilogues need a multiple of 8}}
  // expected-error@+1 {{failed to bufferize op}}
  %y = anvil.linear %x, %w, %b {transpose_rhs} : (tensor<4x8xbf16>, tensor<12x8xbf16>, tensor<12xbf16>) -> tensor<4x12xbf16>
  return %y : tensor<4x12xbf16>
}

// -----

// Tests that the same holds for a weight's gradient with its bias's.
func.func @f64_weight_grad(%x: tensor<8x4xf64>, %g: tensor<8x16xf64>) -> tensor<4x16xf64> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.matmul_bias_grad' of 'f64' is not supported by the runtime's functions (bf16 only)}}
  // expected-error@+1 {{failed to bufferize op}}
  %dw, %db = anvil.matmul_bias_grad %x, %g : (tensor<8x4xf64>, tensor<8x16xf64>) -> (tensor<4x16xf64>, tensor<16xf64>)
  return %dw : tensor<4x16xf64>
}
