// RUN: anvil-opt %s --split-input-file --anvil-fuse=merge-amax=true | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-fuse | FileCheck %s --check-prefix=APART
// RUN: anvil-opt %s --split-input-file --anvil-fuse="merge-amax=true recompute-cheap=true" | FileCheck %s --check-prefix=CUDA

// Tests anvil-fuse's merge-amax (the CUDA backend's): a tensor that an
// elementwise op casts (FP8's codes, by a scale that does not come from this
// amax: the delayed recipe's) and a full reduction takes the amax of is read
// once. The cast and the amax become one generic with both outputs, every
// loop a reduction, and the tensor's producer fuses into it: the kernel
// computes the tensor and writes only its 8-bit codes and its amax. Without
// merge-amax (the CPU's) they stay apart.

#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @delayed
// CHECK: %[[R:.+]]:2 = linalg.generic {{{.+}}iterator_types = ["reduction", "reduction"]} ins(%arg0, %arg1, %arg2 : tensor<8x64xf32>, tensor<8x64xf32>, tensor<f32>) outs(%{{.+}}, %{{.+}} : tensor<8x64xf8E4M3FN>, tensor<f32>)
// CHECK: %[[X:.+]] = arith.addf
// CHECK: %[[S:.+]] = arith.mulf %[[X]]
// CHECK: %[[Q:.+]] = arith.truncf %[[S]] : f32 to f8E4M3FN
// CHECK: %[[A:.+]] = math.absf %[[X]]
// CHECK: %[[M:.+]] = arith.maximumf %{{.+}}, %[[A]]
// CHECK: linalg.yield %[[Q]], %[[M]] : f8E4M3FN, f32
// CHECK: return %[[R]]#0, %[[R]]#1
// APART-LABEL: func.func @delayed
// APART-COUNT-3: linalg.generic
func.func @delayed(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>, %s: tensor<f32>) -> (tensor<8x64xf8E4M3FN>, tensor<f32>) {
  %e = tensor.empty() : tensor<8x64xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8x64xf32>
  %e8 = tensor.empty() : tensor<8x64xf8E4M3FN>
  %c = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<8x64xf32>, tensor<f32>) outs(%e8 : tensor<8x64xf8E4M3FN>) {
  ^bb0(%p: f32, %q: f32, %o: f8E4M3FN):
    %m = arith.mulf %p, %q : f32
    %t = arith.truncf %m : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<8x64xf8E4M3FN>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  return %c, %amax : tensor<8x64xf8E4M3FN>, tensor<f32>
}

// -----

// The current recipe's cast scales by this very amax: it needs the whole
// reduction first, so the two stay apart (two passes over the tensor).
#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @current
// CHECK-NOT: outs(%{{.+}}, %{{.+}} :
// CHECK: return
func.func @current(%x: tensor<8x64xf32>) -> tensor<8x64xf8E4M3FN> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %e8 = tensor.empty() : tensor<8x64xf8E4M3FN>
  %c = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %amax : tensor<8x64xf32>, tensor<f32>) outs(%e8 : tensor<8x64xf8E4M3FN>) {
  ^bb0(%p: f32, %q: f32, %o: f8E4M3FN):
    %m = arith.divf %p, %q : f32
    %t = arith.truncf %m : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<8x64xf8E4M3FN>
  return %c : tensor<8x64xf8E4M3FN>
}

// -----

// A cast whose body captures the amax (through tensor.extract, not an
// operand) depends on it: not merged.
#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @captured
// CHECK-NOT: outs(%{{.+}}, %{{.+}} :
// CHECK: return
func.func @captured(%x: tensor<8x64xf32>) -> tensor<8x64xf8E4M3FN> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %s = tensor.extract %amax[] : tensor<f32>
  %e8 = tensor.empty() : tensor<8x64xf8E4M3FN>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xf32>) outs(%e8 : tensor<8x64xf8E4M3FN>) {
  ^bb0(%p: f32, %o: f8E4M3FN):
    %m = arith.divf %p, %s : f32
    %t = arith.truncf %m : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<8x64xf8E4M3FN>
  return %c : tensor<8x64xf8E4M3FN>
}

// -----

// A bf16 tensor widened and viewed with its heads merged, read through the
// view by an amax and by the delayed recipe's cast (a scale of its own):
// the two merge into one generic that reads the bf16 tensor once; with
// recompute-cheap too (the CUDA backend's options) the view stays shared
// rather than split for a copy of the widening per reader.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#sc3 = affine_map<(d0, d1, d2) -> ()>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @delayed_widened_view
// CHECK: linalg.generic {{.+}} ins(%arg0, %arg1 : tensor<2x8x4x16xbf16>, tensor<f32>) outs(%{{.+}}, %{{.+}} : tensor<2x8x4x16xf8E4M3FN>, tensor<f32>)
// CHECK-NOT: linalg.generic
// CHECK: return
// CUDA-LABEL: func.func @delayed_widened_view
// CUDA: linalg.generic {{.+}} ins(%arg0, %arg1 : tensor<2x8x4x16xbf16>, tensor<f32>) outs(%{{.+}}, %{{.+}} : tensor<2x8x4x16xf8E4M3FN>, tensor<f32>)
// CUDA-NOT: linalg.generic
// CUDA: return
func.func @delayed_widened_view(%h: tensor<2x8x4x16xbf16>, %s: tensor<f32>) -> (tensor<2x8x64xf8E4M3FN>, tensor<f32>) {
  %e = tensor.empty() : tensor<2x8x4x16xf32>
  %w = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%h : tensor<2x8x4x16xbf16>) outs(%e : tensor<2x8x4x16xf32>) {
  ^bb0(%p: bf16, %o: f32):
    %x = arith.extf %p : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<2x8x4x16xf32>
  %v = tensor.collapse_shape %w [[0], [1], [2, 3]] : tensor<2x8x4x16xf32> into tensor<2x8x64xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#id3, #sc3], iterator_types = ["reduction", "reduction", "reduction"]} ins(%v : tensor<2x8x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %e8 = tensor.empty() : tensor<2x8x64xf8E4M3FN>
  %c = linalg.generic {indexing_maps = [#id3, #sc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v, %s : tensor<2x8x64xf32>, tensor<f32>) outs(%e8 : tensor<2x8x64xf8E4M3FN>) {
  ^bb0(%p: f32, %a: f32, %o: f8E4M3FN):
    %m = arith.mulf %p, %a : f32
    %t = arith.truncf %m : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<2x8x64xf8E4M3FN>
  return %c, %amax : tensor<2x8x64xf8E4M3FN>, tensor<f32>
}

// -----

// The current recipe's amax of a tensor that stays written (a layer norm's
// backward writes the residual's gradient, which the cast and the next
// layer read): the amax becomes one more output of the producer, whose
// loops all become reductions, so no pass reads the tensor for it. The
// cast, which scales by the amax, still reads the tensor. The row
// statistic is read at (d0, 0). Without merge-amax the amax stays a pass.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#sc = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @written
// CHECK: %[[G:.+]]:2 = linalg.generic {{{.+}}iterator_types = ["reduction", "reduction"]} ins(%arg0, %arg1 : tensor<8x64xf32>, tensor<8x1xf32>) outs(%{{.+}}, %{{.+}} : tensor<8x64xf32>, tensor<f32>)
// CHECK: %[[X:.+]] = arith.mulf
// CHECK: %[[A:.+]] = math.absf %[[X]]
// CHECK: %[[M:.+]] = arith.maximumf %{{.+}}, %[[A]]
// CHECK: linalg.yield %[[X]], %[[M]] : f32, f32
// CHECK: linalg.generic {{.+}} ins(%[[G]]#0, %[[G]]#1 : tensor<8x64xf32>, tensor<f32>)
// CHECK: return %{{.+}}, %[[G]]#0
// APART-LABEL: func.func @written
// APART-COUNT-3: linalg.generic
func.func @written(%a: tensor<8x64xf32>, %r: tensor<8x1xf32>) -> (tensor<8x64xf8E5M2>, tensor<8x64xf32>) {
  %e = tensor.empty() : tensor<8x64xf32>
  %x = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %r : tensor<8x64xf32>, tensor<8x1xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#id, #sc], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<8x64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %e8 = tensor.empty() : tensor<8x64xf8E5M2>
  %c = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %amax : tensor<8x64xf32>, tensor<f32>) outs(%e8 : tensor<8x64xf8E5M2>) {
  ^bb0(%p: f32, %s: f32, %o: f8E5M2):
    %d = arith.divf %p, %s : f32
    %t = arith.truncf %d : f32 to f8E5M2
    linalg.yield %t : f8E5M2
  } -> tensor<8x64xf8E5M2>
  return %c, %x : tensor<8x64xf8E5M2>, tensor<8x64xf32>
}
