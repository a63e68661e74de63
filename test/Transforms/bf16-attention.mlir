// RUN: anvil-opt %s --anvil-bf16 | FileCheck %s
// RUN: anvil-opt %s --anvil-bf16=modules=mlp | FileCheck %s --check-prefix=OTHER
// RUN: anvil-opt %s --anvil-bf16 --anvil-decompose | FileCheck %s --check-prefix=DECOMPOSED
// RUN: anvil-opt %s --anvil-bf16 --anvil-autodiff | FileCheck %s --check-prefix=GRAD

// Tests anvil-bf16 on attention: the op keeps its f32 operands and result
// and gets bf16_gemms (in the chosen modules), so that its products run on
// bf16 operands wherever they are emitted: in the decomposition for the
// backends and in its VJP.
// CHECK-LABEL: func.func @forward
// CHECK: anvil.attention %arg0, %arg1, %arg2 {bf16_gemms, causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
// OTHER-LABEL: func.func @forward
// OTHER: anvil.attention %arg0, %arg1, %arg2 {causal}

// The decomposition: the scores from bf16 casts of q and the repeated keys
// (grouped-query: 2 key heads for 4 query heads), widened to f32 for the
// scale, the causal mask and the softmax; the probabilities cast to bf16
// for their product with the values, widened back.
// DECOMPOSED-LABEL: func.func @forward
// DECOMPOSED: %[[Q:.+]] = anvil.cast %arg0 : tensor<2x4x8x16xf32> to tensor<2x4x8x16xbf16>
// DECOMPOSED: %[[K:.+]] = anvil.cast %{{.+}} : tensor<2x4x8x16xf32> to tensor<2x4x8x16xbf16>
// DECOMPOSED: %[[S:.+]] = anvil.matmul %[[Q]], %[[K]] {transpose_rhs} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x8xbf16>
// DECOMPOSED: anvil.cast %[[S]] : tensor<2x4x8x8xbf16> to tensor<2x4x8x8xf32>
// DECOMPOSED: anvil.exp %{{.+}} : tensor<2x4x8x8xf32>
// DECOMPOSED: %[[P:.+]] = anvil.cast %{{.+}} : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
// DECOMPOSED: %[[V:.+]] = anvil.cast %{{.+}} : tensor<2x4x8x16xf32> to tensor<2x4x8x16xbf16>
// DECOMPOSED: %[[O:.+]] = anvil.matmul %[[P]], %[[V]] : (tensor<2x4x8x8xbf16>, tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xbf16>
// DECOMPOSED: anvil.cast %[[O]] : tensor<2x4x8x16xbf16> to tensor<2x4x8x16xf32>
// DECOMPOSED-NOT: anvil.matmul {{.+}}xf32>) ->

// The VJP: the recomputed scores, dV = P^T g, dP = g V^T, dQ = dS K and
// dK = dS^T Q all on bf16 operands; the gradients f32.
// GRAD-LABEL: func.func @forward_grad
// GRAD-SAME: -> (tensor<f32>, tensor<2x4x8x16xf32> {anvil.grad = "q"}, tensor<2x2x8x16xf32> {anvil.grad = "k"}, tensor<2x2x8x16xf32> {anvil.grad = "v"})
// GRAD-COUNT-5: anvil.matmul {{.+}}xbf16>) -> tensor<{{[0-9x]+}}xbf16>
// GRAD-NOT: anvil.matmul
// GRAD: return

func.func @forward(%q: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "q", init = #anvil.init<zeros>>},
                   %k: tensor<2x2x8x16xf32> {anvil.param = #anvil.param<name = "k", init = #anvil.init<zeros>>},
                   %v: tensor<2x2x8x16xf32> {anvil.param = #anvil.param<name = "v", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %o = anvil.attention %q, %k, %v {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> loc("h.0.attn")
  %l = anvil.reduce_sum %o dims [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
