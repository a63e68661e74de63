// RUN: anvil-opt %s --split-input-file --anvil-decompose | FileCheck %s --check-prefix=F8
// RUN: anvil-opt %s --split-input-file --anvil-decompose=fp8-gemms=f8-k-inner | FileCheck %s --check-prefix=KINNER
// RUN: anvil-opt %s --split-input-file --anvil-decompose="fp8-gemms=f8-k-inner fp8-gemm-result=bf16" | FileCheck %s --check-prefix=BF16
// RUN: anvil-opt %s --split-input-file --anvil-decompose="fp8-gemms=f8-k-inner fp8-gemm-result=bf16 fp8-gelu-epilogue=true" | FileCheck %s --check-prefix=GELU
// RUN: anvil-opt %s --split-input-file --anvil-decompose=fp8-gemms=dequantized | FileCheck %s --check-prefix=DEQ --implicit-check-not=anvil.matmul_f8
// RUN: not anvil-opt %s --split-input-file --anvil-decompose=fp8-gemms=bf16 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not anvil-opt %s --split-input-file --anvil-decompose=fp8-gemm-result=f16 2>&1 | FileCheck %s --check-prefix=BADRESULT

// Tests how anvil-decompose lowers a GEMM of two tensorwise FP8
// quantizations. fp8-gemms=f8 (the default, the CPU's): anvil.matmul_f8 of
// the 8-bit codes, whatever their layout, scaled by (1 / s_x) (1 / s_w).
// f8-k-inner (the CUDA backend's): both operands with K innermost, as
// cuBLASLt's FP8 GEMM reads them (a transposed copy of the codes where an
// operand is not: a pass over 8-bit data), unless K is not a multiple of
// 16 or the result's rows of 16 bytes (N of 4 for f32, 8 for bf16).
// fp8-gemm-result=bf16 (--precision=fp8's): a bf16 result, widened for the
// GEMM's users. dequantized: an f32 GEMM of the dequantized values.
// fp8-gelu-epilogue (--gemm-epilogues=on's): an MLP's first GEMM, bias and
// GELU as anvil.linear_gelu_f8 when the GELU's quantization has a given
// scale.
// BAD: anvil-decompose: fp8-gemms=bf16: the choices are dequantized, f8 and f8-k-inner
// BADRESULT: anvil-decompose: fp8-gemm-result=f16: the choices are f32 and bf16

// A linear layer, y = x W with W [in, out]. The scales are the
// dequantization factors 1 / s_x and 1 / s_w, each alone (1 / (s_x s_w)
// overflows to 0 for tiny amaxes), which the GEMM multiplies.
// F8-LABEL: func.func @linear
// F8: %[[SX:.+]] = anvil.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>
// F8: %[[X8:.+]] = anvil.cast %{{.+}} : tensor<4x32x64xf32> to tensor<4x32x64xf8E4M3FN>
// F8: %[[SW:.+]] = anvil.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<f32>
// F8: %[[W8:.+]] = anvil.cast %{{.+}} : tensor<64x96xf32> to tensor<64x96xf8E4M3FN>
// F8: %[[UX:.+]] = anvil.div %[[ONE:.+]], %[[SX]] : tensor<f32>
// F8: %[[UW:.+]] = anvil.div %[[ONE]], %[[SW]] : tensor<f32>
// F8: %[[Y:.+]] = anvil.matmul_f8 %[[X8]], %[[W8]] scales(%[[UX]], %[[UW]]) : (tensor<4x32x64xf8E4M3FN>, tensor<64x96xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x32x96xf32>
// F8: return %[[Y]]
// KINNER-LABEL: func.func @linear
// KINNER: %[[W8:.+]] = anvil.cast %{{.+}} : tensor<64x96xf32> to tensor<64x96xf8E4M3FN>
// KINNER: %[[WT:.+]] = anvil.transpose %[[W8]], [1, 0] : tensor<64x96xf8E4M3FN> -> tensor<96x64xf8E4M3FN>
// KINNER: anvil.matmul_f8 %{{.+}}, %[[WT]] scales(%{{.+}}, %{{.+}}) {transpose_rhs} : (tensor<4x32x64xf8E4M3FN>, tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x32x96xf32>
// BF16-LABEL: func.func @linear
// BF16: %[[P:.+]] = anvil.matmul_f8 {{.+}} -> tensor<4x32x96xbf16>
// BF16: %[[Y:.+]] = anvil.cast %[[P]] : tensor<4x32x96xbf16> to tensor<4x32x96xf32>
// BF16: return %[[Y]]
// DEQ-LABEL: func.func @linear
// DEQ: anvil.matmul %{{.+}}, %{{.+}} : (tensor<4x32x64xf32>, tensor<64x96xf32>) -> tensor<4x32x96xf32>
func.func @linear(%x: tensor<4x32x64xf32>, %w: tensor<64x96xf32>) -> tensor<4x32x96xf32> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw = anvil.fp8_quantize %w forward f8E4M3FN : tensor<64x96xf32>
  %y = anvil.matmul %qx, %qw : (tensor<4x32x64xf32>, tensor<64x96xf32>) -> tensor<4x32x96xf32>
  return %y : tensor<4x32x96xf32>
}

// -----

// The weight's gradient, dW = X^T dY, with the gradient in E5M2: K is the
// tokens (128). With K innermost both operands are transposed copies.
// F8-LABEL: func.func @weight_gradient
// F8: anvil.matmul_f8 %{{.+}}, %{{.+}} scales(%{{.+}}, %{{.+}}) {transpose_lhs} : (tensor<128x64xf8E4M3FN>, tensor<128x96xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<64x96xf32>
// KINNER-LABEL: func.func @weight_gradient
// KINNER: anvil.transpose %{{.+}}, [1, 0] : tensor<128x64xf8E4M3FN> -> tensor<64x128xf8E4M3FN>
// KINNER: anvil.transpose %{{.+}}, [1, 0] : tensor<128x96xf8E5M2> -> tensor<96x128xf8E5M2>
// KINNER: anvil.matmul_f8 %{{.+}}, %{{.+}} scales(%{{.+}}, %{{.+}}) {transpose_rhs} : (tensor<64x128xf8E4M3FN>, tensor<96x128xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<64x96xf32>
func.func @weight_gradient(%x: tensor<128x64xf32>, %g: tensor<128x96xf32>) -> tensor<64x96xf32> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<128x64xf32>
  %qg = anvil.fp8_quantize %g forward f8E5M2 : tensor<128x96xf32>
  %dw = anvil.matmul %qx, %qg {transpose_lhs} : (tensor<128x64xf32>, tensor<128x96xf32>) -> tensor<64x96xf32>
  return %dw : tensor<64x96xf32>
}

// -----

// What stays a GEMM of the dequantized values: K = 10 with K innermost
// (cuBLASLt reads 16-byte rows; N must be a multiple of 4 too, for the
// f32 rows), two E5M2 operands (no FP8 GEMM takes them), and MX blocks
// (their scales vary along K).
// F8-LABEL: func.func @stays
// F8: anvil.matmul_f8 {{.+}} -> tensor<8x16xf32>
// F8: anvil.matmul %{{.+}} : (tensor<8x10xf32>, tensor<10x16xf32>) -> tensor<8x16xf32>
// F8: anvil.matmul %{{.+}} : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
// KINNER-LABEL: func.func @stays
// KINNER-NOT: anvil.matmul_f8
// KINNER: return
func.func @stays(%a: tensor<8x10xf32>, %b: tensor<10x16xf32>, %c: tensor<8x32xf32>, %d: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %qa = anvil.fp8_quantize %a forward f8E4M3FN : tensor<8x10xf32>
  %qb = anvil.fp8_quantize %b forward f8E4M3FN : tensor<10x16xf32>
  %0 = anvil.matmul %qa, %qb : (tensor<8x10xf32>, tensor<10x16xf32>) -> tensor<8x16xf32>
  %ea = anvil.fp8_quantize %a forward f8E5M2 : tensor<8x10xf32>
  %eb = anvil.fp8_quantize %b forward f8E5M2 : tensor<10x16xf32>
  %1 = anvil.matmul %ea, %eb : (tensor<8x10xf32>, tensor<10x16xf32>) -> tensor<8x16xf32>
  %mc = anvil.fp8_quantize %c forward f8E4M3FN block 32 dim 1 : tensor<8x32xf32>
  %md = anvil.fp8_quantize %d forward f8E4M3FN block 32 dim 0 : tensor<32x16xf32>
  %2 = anvil.matmul %mc, %md : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %0, %1, %2 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// One quantization read by two GEMMs (a weight: the forward product and
// dX = dY W^T) and by another op is computed once, its amax all-reduced
// once over the tensor-parallel axis; the other op reads its dequantized
// codes. A given scale (the delayed recipe's) is used as it is. N = 6 is
// not a multiple of 4: with K innermost that GEMM stays dequantized.
// F8-LABEL: func.func @shared
// F8: anvil.all_reduce max
// F8-NOT: anvil.all_reduce
// F8: %[[W8:.+]] = anvil.cast %{{.+}} : tensor<32x16xf32> to tensor<32x16xf8E4M3FN>
// F8: %[[BACK:.+]] = anvil.cast %[[W8]] : tensor<32x16xf8E4M3FN> to tensor<32x16xf32>
// F8: anvil.div %[[BACK]], %{{.+}} : tensor<32x16xf32>
// F8: anvil.matmul_f8 %{{.+}}, %[[W8]] scales({{.+}}) : (tensor<8x32xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<8x16xf32>
// F8: anvil.matmul_f8 %{{.+}}, %[[W8]] scales({{.+}}) {transpose_rhs} : (tensor<8x16xf8E5M2>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<8x32xf32>
// F8: anvil.matmul_f8 {{.+}} -> tensor<8x6xf32>
// F8-NOT: anvil.all_reduce
// KINNER-LABEL: func.func @shared
// KINNER: anvil.matmul_f8 {{.+}} {transpose_rhs} : (tensor<8x32xf8E4M3FN>, tensor<16x32xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<8x16xf32>
// KINNER: anvil.matmul_f8 {{.+}} {transpose_rhs} : (tensor<8x16xf8E5M2>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<8x32xf32>
// KINNER: anvil.matmul %{{.+}} : (tensor<8x32xf32>, tensor<32x6xf32>) -> tensor<8x6xf32>
// With bf16 results, N = 16 is a multiple of 8 and N = 32 too.
// BF16-LABEL: func.func @shared
// BF16: anvil.matmul_f8 {{.+}} -> tensor<8x16xbf16>
// BF16: anvil.matmul_f8 {{.+}} -> tensor<8x32xbf16>
module attributes {anvil.mesh = {tp = 2 : i64}} {
func.func @shared(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %g: tensor<8x16xf32>, %s: tensor<f32>, %v: tensor<32x6xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>, tensor<32x16xf32>, tensor<8x6xf32>) {
  %qx = anvil.fp8_quantize %x scale %s forward f8E4M3FN : tensor<8x32xf32>
  %qw = anvil.fp8_quantize %w forward f8E4M3FN amax_axis "tp" : tensor<32x16xf32>
  %qg = anvil.fp8_quantize %g forward f8E5M2 : tensor<8x16xf32>
  %qv = anvil.fp8_quantize %v forward f8E4M3FN : tensor<32x6xf32>
  %y = anvil.matmul %qx, %qw : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %dx = anvil.matmul %qg, %qw {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %e = anvil.exp %qw : tensor<32x16xf32>
  %z = anvil.matmul %qx, %qv : (tensor<8x32xf32>, tensor<32x6xf32>) -> tensor<8x6xf32>
  return %y, %dx, %e, %z : tensor<8x16xf32>, tensor<8x32xf32>, tensor<32x16xf32>, tensor<8x6xf32>
}
}

// -----

// The q, k and v projection's form: the product (through its gradient's
// quantization, an identity forward), plus a bias, rounded to bf16. With
// bf16 results the bias (rounded to bf16) joins the GEMM, which replaces
// the rounding; with f32 results the add stays.
// BF16-LABEL: func.func @bias_then_round
// BF16: %[[B:.+]] = anvil.cast %arg2 : tensor<96xf32> to tensor<96xbf16>
// BF16: %[[Y:.+]] = anvil.matmul_f8 %{{.+}}, %{{.+}} scales(%{{.+}}, %{{.+}}) bias(%[[B]]) {transpose_rhs} : (tensor<4x32x64xf8E4M3FN>, tensor<96x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<96xbf16>) -> tensor<4x32x96xbf16>
// BF16-NOT: anvil.add
// BF16: return %[[Y]]
// F8-LABEL: func.func @bias_then_round
// F8: anvil.matmul_f8 {{.+}} -> tensor<4x32x96xf32>
// F8: anvil.add
// F8: anvil.cast %{{.+}} : tensor<4x32x96xf32> to tensor<4x32x96xbf16>
func.func @bias_then_round(%x: tensor<4x32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<4x32x96xbf16> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw = anvil.fp8_quantize %w forward f8E4M3FN : tensor<64x96xf32>
  %y = anvil.matmul %qx, %qw : (tensor<4x32x64xf32>, tensor<64x96xf32>) -> tensor<4x32x96xf32>
  %g = anvil.fp8_quantize %y backward f8E5M2 : tensor<4x32x96xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<96xf32> -> tensor<4x32x96xf32>
  %s = anvil.add %g, %bb : tensor<4x32x96xf32>
  %r = anvil.cast %s : tensor<4x32x96xf32> to tensor<4x32x96xbf16>
  return %r : tensor<4x32x96xbf16>
}

// -----

// A bias computed after the product: the GEMM goes where the rounding was,
// after the bias.
// BF16-LABEL: func.func @bias_after_product
// BF16: %[[B2:.+]] = anvil.add %arg2, %arg2 : tensor<96xf32>
// BF16: %[[B:.+]] = anvil.cast %[[B2]] : tensor<96xf32> to tensor<96xbf16>
// BF16: anvil.matmul_f8 {{.+}} bias(%[[B]])
func.func @bias_after_product(%x: tensor<4x32x64xf32>, %w: tensor<64x96xf32>, %b: tensor<96xf32>) -> tensor<4x32x96xbf16> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw = anvil.fp8_quantize %w forward f8E4M3FN : tensor<64x96xf32>
  %y = anvil.matmul %qx, %qw : (tensor<4x32x64xf32>, tensor<64x96xf32>) -> tensor<4x32x96xf32>
  %b2 = anvil.add %b, %b : tensor<96xf32>
  %bb = anvil.broadcast %b2, dims = [2] : tensor<96xf32> -> tensor<4x32x96xf32>
  %s = anvil.add %bb, %y : tensor<4x32x96xf32>
  %r = anvil.cast %s : tensor<4x32x96xf32> to tensor<4x32x96xbf16>
  return %r : tensor<4x32x96xbf16>
}

// -----

// An FP8 MLP under the delayed recipe: the GELU's quantization has a given
// scale, and its amax (the history's entry) is taken of |gelu|. With
// fp8-gelu-epilogue the first GEMM writes the GELU's codes, which the
// second reads, their amax, and the bf16 sum before the GELU, which the
// GELU's gradient (here %d) reads widened. The bias is rounded to bf16.
// GELU-LABEL: func.func @mlp_delayed
// GELU: %[[B:.+]] = anvil.cast %arg3 : tensor<256xf32> to tensor<256xbf16>
// GELU: %[[H:.+]], %[[PRE:.+]], %[[AMAX:.+]] = anvil.linear_gelu_f8 %{{.+}}, %{{.+}} scales(%{{.+}}, %{{.+}}) bias(%[[B]]) out_scale(%arg4) {transpose_rhs} : (tensor<4x32x64xf8E4M3FN>, tensor<256x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<256xbf16>, tensor<f32>) -> (tensor<4x32x256xf8E4M3FN>, tensor<4x32x256xbf16>, tensor<f32>)
// GELU: %[[P:.+]] = anvil.cast %[[PRE]] : tensor<4x32x256xbf16> to tensor<4x32x256xf32>
// GELU-NOT: anvil.gelu
// GELU-NOT: anvil.reduce_max {{.+}} : tensor<4x32x256xf32>
// GELU: %[[Y:.+]] = anvil.matmul_f8 %[[H]], %{{.+}} scales(%{{.+}}, %{{.+}}) {transpose_rhs}
// GELU: %[[D:.+]] = anvil.mul %[[P]], %[[P]] : tensor<4x32x256xf32>
// GELU: return %{{.+}}, %[[AMAX]], %[[D]]
// Without the option the GELU stays a kernel's, after a bf16 GEMM.
// BF16-LABEL: func.func @mlp_delayed
// BF16-NOT: anvil.linear_gelu_f8
// BF16: anvil.matmul_f8 {{.+}} -> tensor<4x32x256xbf16>
// BF16: anvil.gelu tanh
func.func @mlp_delayed(%x: tensor<4x32x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>, %b: tensor<256xf32>, %s: tensor<f32>) -> (tensor<4x32x64xbf16>, tensor<f32>, tensor<4x32x256xf32>) {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x256xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x256xf32>) -> tensor<4x32x256xf32>
  %g = anvil.fp8_quantize %h backward f8E5M2 : tensor<4x32x256xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<256xf32> -> tensor<4x32x256xf32>
  %p = anvil.add %g, %bb : tensor<4x32x256xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x256xf32>
  %qa = anvil.fp8_quantize %a scale %s forward f8E4M3FN : tensor<4x32x256xf32>
  %abs = anvil.abs %a : tensor<4x32x256xf32>
  %amax = anvil.reduce_max %abs dims [0, 1, 2] : tensor<4x32x256xf32> -> tensor<f32>
  %qw2 = anvil.fp8_quantize %w2 forward f8E4M3FN : tensor<256x64xf32>
  %y = anvil.matmul %qa, %qw2 : (tensor<4x32x256xf32>, tensor<256x64xf32>) -> tensor<4x32x64xf32>
  %r = anvil.cast %y : tensor<4x32x64xf32> to tensor<4x32x64xbf16>
  %d = anvil.mul %p, %p : tensor<4x32x256xf32>
  return %r, %amax, %d : tensor<4x32x64xbf16>, tensor<f32>, tensor<4x32x256xf32>
}

// -----

// A magnitude of the GELU that nothing reads goes with the GELU.
// GELU-LABEL: func.func @unread_magnitude
// GELU: anvil.linear_gelu_f8
// GELU-NOT: anvil.abs {{.+}} : tensor<4x32x256xf32>
// GELU: return
func.func @unread_magnitude(%x: tensor<4x32x64xf32>, %w1: tensor<64x256xf32>, %b: tensor<256xf32>, %s: tensor<f32>) -> tensor<4x32x256xf32> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x256xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x256xf32>) -> tensor<4x32x256xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<256xf32> -> tensor<4x32x256xf32>
  %p = anvil.add %h, %bb : tensor<4x32x256xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x256xf32>
  %unread = anvil.abs %a : tensor<4x32x256xf32>
  %qa = anvil.fp8_quantize %a scale %s forward f8E4M3FN : tensor<4x32x256xf32>
  return %qa : tensor<4x32x256xf32>
}

// -----

// The GELU's codes cannot come from its GEMM when their scale is the
// GELU's own amax (the current recipe), when something else reads the
// GELU, when its rows of codes are not 16-byte aligned (N = 88), when the
// scale is computed after a reader of the sum before the GELU (the GEMM
// would come after that reader), or when the codes are E5M2 and neither
// operand is (no FP8 GEMM writes them).
// GELU-LABEL: func.func @mlp_current
// GELU-NOT: anvil.linear_gelu_f8
// GELU: anvil.gelu tanh
// GELU-LABEL: func.func @gelu_read_elsewhere
// GELU-NOT: anvil.linear_gelu_f8
// GELU: anvil.gelu tanh
// GELU-LABEL: func.func @unaligned_codes
// GELU-NOT: anvil.linear_gelu_f8
// GELU: anvil.gelu tanh
// GELU-LABEL: func.func @scale_after_reader
// GELU-NOT: anvil.linear_gelu_f8
// GELU: anvil.gelu tanh
// GELU-LABEL: func.func @e5m2_codes
// GELU-NOT: anvil.linear_gelu_f8
// GELU: anvil.gelu tanh
func.func @mlp_current(%x: tensor<4x32x64xf32>, %w1: tensor<64x256xf32>, %b: tensor<256xf32>) -> tensor<4x32x256xf32> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x256xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x256xf32>) -> tensor<4x32x256xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<256xf32> -> tensor<4x32x256xf32>
  %p = anvil.add %h, %bb : tensor<4x32x256xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x256xf32>
  %qa = anvil.fp8_quantize %a forward f8E4M3FN : tensor<4x32x256xf32>
  return %qa : tensor<4x32x256xf32>
}
func.func @gelu_read_elsewhere(%x: tensor<4x32x64xf32>, %w1: tensor<64x256xf32>, %b: tensor<256xf32>, %s: tensor<f32>) -> (tensor<4x32x256xf32>, tensor<4x32x256xf32>) {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x256xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x256xf32>) -> tensor<4x32x256xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<256xf32> -> tensor<4x32x256xf32>
  %p = anvil.add %h, %bb : tensor<4x32x256xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x256xf32>
  %qa = anvil.fp8_quantize %a scale %s forward f8E4M3FN : tensor<4x32x256xf32>
  %e = anvil.exp %a : tensor<4x32x256xf32>
  return %qa, %e : tensor<4x32x256xf32>, tensor<4x32x256xf32>
}
func.func @unaligned_codes(%x: tensor<4x32x64xf32>, %w1: tensor<64x88xf32>, %b: tensor<88xf32>, %s: tensor<f32>) -> tensor<4x32x88xf32> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x88xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x88xf32>) -> tensor<4x32x88xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<88xf32> -> tensor<4x32x88xf32>
  %p = anvil.add %h, %bb : tensor<4x32x88xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x88xf32>
  %qa = anvil.fp8_quantize %a scale %s forward f8E4M3FN : tensor<4x32x88xf32>
  return %qa : tensor<4x32x88xf32>
}
func.func @scale_after_reader(%x: tensor<4x32x64xf32>, %w1: tensor<64x256xf32>, %b: tensor<256xf32>, %s: tensor<f32>) -> (tensor<4x32x256xf32>, tensor<4x32x256xf32>) {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x256xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x256xf32>) -> tensor<4x32x256xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<256xf32> -> tensor<4x32x256xf32>
  %p = anvil.add %h, %bb : tensor<4x32x256xf32>
  %d = anvil.mul %p, %p : tensor<4x32x256xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x256xf32>
  %s2 = anvil.add %s, %s : tensor<f32>
  %qa = anvil.fp8_quantize %a scale %s2 forward f8E4M3FN : tensor<4x32x256xf32>
  return %qa, %d : tensor<4x32x256xf32>, tensor<4x32x256xf32>
}
func.func @e5m2_codes(%x: tensor<4x32x64xf32>, %w1: tensor<64x256xf32>, %b: tensor<256xf32>, %s: tensor<f32>) -> tensor<4x32x256xf32> {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<4x32x64xf32>
  %qw1 = anvil.fp8_quantize %w1 forward f8E4M3FN : tensor<64x256xf32>
  %h = anvil.matmul %qx, %qw1 : (tensor<4x32x64xf32>, tensor<64x256xf32>) -> tensor<4x32x256xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<256xf32> -> tensor<4x32x256xf32>
  %p = anvil.add %h, %bb : tensor<4x32x256xf32>
  %a = anvil.gelu tanh %p : tensor<4x32x256xf32>
  %qa = anvil.fp8_quantize %a scale %s forward f8E5M2 : tensor<4x32x256xf32>
  return %qa : tensor<4x32x256xf32>
}
