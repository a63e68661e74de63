// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="hoist-argument-only=false order-updates=false" | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false max-operands=5 small-elements=4607 hoist-argument-only=false" | FileCheck %s --check-prefix=FEW
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false max-operands=5 small-elements=4608 hoist-argument-only=false" | FileCheck %s --check-prefix=SMALL
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false max-operands=3 hoist-argument-only=false" | FileCheck %s --check-prefix=SUMS
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false max-operands=5 max-small-operands=5 hoist-argument-only=false" | FileCheck %s --check-prefix=FEW
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse=order-updates=false | FileCheck %s --check-prefix=HOIST
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false hoist-argument-only=false sink-small-readers=false" | FileCheck %s --check-prefix=NOSINK
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false hoist-argument-only=false max-sunk-elements=8" | FileCheck %s --check-prefix=NOSINK
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="order-updates=false hoist-argument-only=false max-operands=5 max-small-operands=5" | FileCheck %s --check-prefix=CAPT

// Tests anvil-horizontal-fuse: independent generics over the same static
// domain (all parallel, reductions with a parallel loop, or small
// reductions over every loop) become one generic at the last one's place,
// their operands and results in order, each body computed in turn.

#v = affine_map<(d0) -> (d0)>
// Two updates of 768 elements and a third of another domain: the two
// merge (four inputs, two outputs, both bodies, both results yielded); the
// third stays.
// CHECK-LABEL: func.func @independent
// CHECK: %[[C:.+]] = linalg.generic {{.*}} ins(%arg4 : tensor<64xf32>) outs(%arg4 : tensor<64xf32>)
// CHECK: %[[M:.+]]:2 = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel"]} ins(%arg0, %arg1, %arg2, %arg3 : tensor<768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>) outs(%arg0, %arg2 : tensor<768xf32>, tensor<768xf32>)
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[G:.+]]: f32, %[[Y:.+]]: f32, %[[H:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[A:.+]] = arith.subf %[[X]], %[[G]] : f32
// CHECK-NEXT: %[[B:.+]] = arith.mulf %[[Y]], %[[H]] : f32
// CHECK-NEXT: linalg.yield %[[A]], %[[B]] : f32, f32
// CHECK: return %[[M]]#0, %[[M]]#1, %[[C]]
// Six operands are more than max-operands = 5; they may still merge under
// max-small-operands (64) while they hold at most small-elements elements:
// 4 x 768 + 2 x 768 = 4608.
// FEW-LABEL: func.func @independent
// FEW-COUNT-3: linalg.generic
// FEW-NOT: linalg.generic
// FEW-LABEL: func.func @dependent
// SMALL-LABEL: func.func @independent
// SMALL-COUNT-2: linalg.generic
// SMALL-NOT: linalg.generic
// SMALL-LABEL: func.func @dependent
func.func @independent(%x: tensor<768xf32>, %g: tensor<768xf32>, %y: tensor<768xf32>, %h: tensor<768xf32>, %z: tensor<64xf32>) -> (tensor<768xf32>, tensor<768xf32>, tensor<64xf32>) {
  %a = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%x, %g : tensor<768xf32>, tensor<768xf32>) outs(%x : tensor<768xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.subf %i, %j : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  %c = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%z : tensor<64xf32>) outs(%z : tensor<64xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.negf %i : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %b = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%y, %h : tensor<768xf32>, tensor<768xf32>) outs(%y : tensor<768xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.mulf %i, %j : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %a, %b, %c : tensor<768xf32>, tensor<768xf32>, tensor<64xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
// The second reads the first, so they stay apart (the first's group
// closes), and so does every later op from the first: a merged op at the
// later op's place would come after the first's readers (%b, %r). The
// second, third and fourth, independent of each other, merge after %r, at
// the fourth's place.
// CHECK-LABEL: func.func @dependent
// CHECK: %[[A:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>)
// CHECK: %[[R:.+]] = tensor.extract %[[A]]
// CHECK: %{{.+}}:3 = linalg.generic {{.*}} ins(%[[A]], %arg1, %arg2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @dependent(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<8xf32>, %i: index) -> (tensor<8xf32>, tensor<8xf32>, f32, tensor<8xf32>, tensor<8xf32>) {
  %a = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %r = tensor.extract %a[%i] : tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%y : tensor<8xf32>) outs(%y : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%z : tensor<8xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = math.exp %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %a, %b, %r, %c, %d : tensor<8xf32>, tensor<8xf32>, f32, tensor<8xf32>, tensor<8xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#scalar = affine_map<() -> ()>
// Reductions over every loop of at most 4096 f32 terms into rank-0 outputs
// (sums: LAMB's squared norms of small tensors; maxima: FP8's amax
// histories) merge, each output folded in its own order, two of 4096
// terms too; an amax (the maximum of |x|, which a grid folds atomically),
// a sum that reads another output, sums of more terms (two of 4097),
// reductions of bf16 terms (a warp folds f32 only) and ops with attributes
// stay; scalars (no loops) merge.
// CHECK-LABEL: func.func @kinds
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg0 : tensor<8xf32>) outs(%arg4 : tensor<f32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.absf
// CHECK-NEXT: arith.maximumf
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg1 : tensor<8xf32>) outs(%arg4, %arg4 : tensor<f32>, tensor<f32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg5 : tensor<4097xf32>) outs(%arg4 : tensor<f32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg5 : tensor<4097xf32>) outs(%arg2 : tensor<f32>)
// CHECK: %{{.+}}:2 = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg6 : tensor<4096xf32>) outs(%arg2, %arg3 : tensor<f32>, tensor<f32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg7 : tensor<8xbf16>) outs(%arg2 : tensor<f32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg7 : tensor<8xbf16>) outs(%arg3 : tensor<f32>)
// CHECK: %{{.+}}:3 = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg1, %arg0 : tensor<8xf32>, tensor<8xf32>) outs(%arg3, %arg2, %arg3 : tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK-NEXT: ^bb0(%[[Y:.+]]: f32, %[[X:.+]]: f32, %[[M:.+]]: f32, %[[P:.+]]: f32, %[[Q:.+]]: f32):
// CHECK-NEXT: %[[MY:.+]] = arith.maximumf %[[Y]], %[[M]] : f32
// CHECK-NEXT: %[[SX:.+]] = arith.addf %[[X]], %[[P]] : f32
// CHECK-NEXT: %[[SY:.+]] = arith.addf %[[Y]], %[[Q]] : f32
// CHECK-NEXT: linalg.yield %[[MY]], %[[SX]], %[[SY]] : f32, f32, f32
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>) {{.*}} attrs = {{ *}}{keep}
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<8xf32>) {{.*}} attrs = {{ *}}{keep}
// CHECK: %{{.+}}:2 = linalg.generic {{.*}}iterator_types = []} ins(%arg2, %arg3 : tensor<f32>, tensor<f32>)
func.func @kinds(%x: tensor<8xf32>, %y: tensor<8xf32>, %p: tensor<f32>, %q: tensor<f32>, %m: tensor<f32>, %long: tensor<4097xf32>, %edge: tensor<4096xf32>, %half: tensor<8xbf16>) -> (tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %mx = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%m : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %a = math.absf %in : f32
    %s = arith.maximumf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %chain:2 = linalg.generic {indexing_maps = [#v, #s, #s], iterator_types = ["reduction"]} ins(%y : tensor<8xf32>) outs(%m, %m : tensor<f32>, tensor<f32>) {
  ^bb0(%in: f32, %o: f32, %o2: f32):
    %s = arith.addf %in, %o : f32
    %t = arith.addf %s, %o2 : f32
    linalg.yield %s, %t : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %sl = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%long : tensor<4097xf32>) outs(%m : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %sl2 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%long : tensor<4097xf32>) outs(%p : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%edge : tensor<4096xf32>) outs(%p : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e2 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%edge : tensor<4096xf32>) outs(%q : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.minimumf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %h1 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%half : tensor<8xbf16>) outs(%p : tensor<f32>) {
  ^bb0(%in: bf16, %o: f32):
    %w = arith.extf %in : bf16 to f32
    %s = arith.addf %w, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %h2 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%half : tensor<8xbf16>) outs(%q : tensor<f32>) {
  ^bb0(%in: bf16, %o: f32):
    %w = arith.extf %in : bf16 to f32
    %s = arith.maximumf %w, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %my = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%y : tensor<8xf32>) outs(%q : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.maximumf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %sx = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%p : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %sy = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%y : tensor<8xf32>) outs(%q : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %kx = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%x : tensor<8xf32>) attrs = {keep} {
  ^bb0(%in: f32, %o: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %ky = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%y : tensor<8xf32>) outs(%y : tensor<8xf32>) attrs = {keep} {
  ^bb0(%in: f32, %o: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %np = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%p : tensor<f32>) outs(%p : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %nq = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%q : tensor<f32>) outs(%q : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %sx, %sy, %kx, %ky, %np, %nq, %mx, %chain#0, %chain#1, %sl, %sl2, %e1, %e2, %my, %h1, %h2 : tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
// The fills that start reductions over every loop (atomic amaxes) move to
// the block's start as one generic per shape, fresh destinations; a fill
// that starts a reduction with parallel loops stays where it is.
// CHECK-LABEL: func.func @amax_fills
// CHECK-NEXT: %[[E0:.+]] = tensor.empty() : tensor<f32>
// CHECK-NEXT: %[[E1:.+]] = tensor.empty() : tensor<f32>
// CHECK-NEXT: %[[F:.+]]:2 = linalg.generic {{.*}}iterator_types = []} outs(%[[E0]], %[[E1]] : tensor<f32>, tensor<f32>)
// CHECK-DAG: arith.constant 0xFF800000 : f32
// CHECK-DAG: arith.constant 0.000000e+00 : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg0 : tensor<8xf32>) outs(%[[F]]#0 : tensor<f32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg1 : tensor<8xf32>) outs(%[[F]]#1 : tensor<f32>)
// CHECK: %[[ROWS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg2 : tensor<4x8xf32>) outs(%[[ROWS]] : tensor<4xf32>)
func.func @amax_fills(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<4x8xf32>) -> (tensor<f32>, tensor<f32>, tensor<4xf32>) {
  %low = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%low : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %m0 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%x : tensor<8xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %a = math.absf %in : f32
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<f32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<f32>) -> tensor<f32>
  %m1 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%y : tensor<8xf32>) outs(%f1 : tensor<f32>) {
  ^bb0(%in: f32, %o: f32):
    %a = math.absf %in : f32
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %s2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%z : tensor<4x8xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %m0, %m1, %s2 : tensor<f32>, tensor<f32>, tensor<4xf32>
}

// -----

// Reductions with a parallel loop merge like elementwise ops when their
// domains and loop kinds match: a row maximum and a row sum of one tensor
// (the cross-entropy's maximum and label logit: the logits read once, one
// input of the merged op), and sums of products over shared loops (a
// norm's weight gradient, sum(dy x) over the rows), each output folded in
// its own order. A reduction over every loop (above) stays alone, and so
// does a GEMM (@gemms, below).
#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @rows
// CHECK: %[[M:.+]]:4 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1, %arg2 : tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) outs(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
// CHECK: arith.maximumf
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2, %[[M]]#3
func.func @rows(%z: tensor<4x1x8xf32>, %a: tensor<4x1x8xf32>, %b: tensor<4x1x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %low = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %fm = linalg.fill ins(%low : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %max = linalg.generic {indexing_maps = [#x3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%z : tensor<4x1x8xf32>) outs(%fm : tensor<4x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#x3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%z : tensor<4x1x8xf32>) outs(%fs : tensor<4x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %dot1 = linalg.generic {indexing_maps = [#x3, #x3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x1x8xf32>, tensor<4x1x8xf32>) outs(%f1 : tensor<4x1xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %p = arith.mulf %i, %j : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %dot2 = linalg.generic {indexing_maps = [#x3, #x3, #r3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x1x8xf32>, tensor<4x1x8xf32>) outs(%f2 : tensor<4x1xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %p = arith.mulf %i, %j : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  return %max, %sum, %dot1, %dot2 : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Two products with m, n and k loops (batched GEMMs, which GemmToBlas runs
// as library calls) over one domain stay apart.
#ga = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#gb = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#gc = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @gemms
// CHECK-COUNT-2: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%{{.+}} : tensor<2x4x4xf32>)
// CHECK: return
// HOIST-LABEL: func.func @gemms
func.func @gemms(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>, %c: tensor<2x4x8xf32>, %d: tensor<2x8x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = linalg.generic {indexing_maps = [#ga, #gb, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %m = arith.mulf %i, %j : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %q = linalg.generic {indexing_maps = [#ga, #gb, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%c, %d : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %m = arith.mulf %i, %j : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  return %p, %q : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// -----

// A column sum's fill (its innermost loop parallel) moves to the start like
// an amax's, merged by shape: the layers' bias-gradient sums, whose merged
// kernel takes no fill into its launch.
#c = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @column_fills
// CHECK-NEXT: %[[E0:.+]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[E1:.+]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[F:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel"]} outs(%[[E0]], %[[E1]] : tensor<4xf32>, tensor<4xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%arg0, %arg1 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%[[F]]#0, %[[F]]#1 : tensor<4xf32>, tensor<4xf32>)
func.func @column_fills(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %s0 = linalg.generic {indexing_maps = [#c, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<8x4xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s1 = linalg.generic {indexing_maps = [#c, #col], iterator_types = ["reduction", "parallel"]} ins(%y : tensor<8x4xf32>) outs(%f1 : tensor<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s0, %s1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Casts of weights (function arguments), each read by the row sum just
// after it: the first cast's group closes on that read, so the casts do not
// merge, unless the casts that read only arguments move to the start first
// (hoist-argument-only, the default), where the two of one shape merge;
// the third, of a shape of its own, stays where it was. The two row sums,
// small and reading only those casts and a fill, move after them (merging
// either way).
#w = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @casts
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: linalg.generic
// HOIST-LABEL: func.func @casts
// HOIST-NEXT: tensor.empty() : tensor<4x8xbf16>
// HOIST-NEXT: tensor.empty() : tensor<4x8xbf16>
// HOIST-NEXT: %[[C:.+]]:2 = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// HOIST: linalg.fill
// HOIST-NEXT: linalg.generic {{.*}} ins(%[[C]]#0, %[[C]]#1 : tensor<4x8xbf16>, tensor<4x8xbf16>)
// HOIST: linalg.generic {{.*}} ins(%arg2 : tensor<8x4xf32>)
// HOIST-NOT: linalg.generic
func.func @casts(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<8x4xbf16>) {
  %zero = arith.constant 0.0 : f32
  %s = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%s : tensor<4xf32>) -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<4x8xbf16>
  %a16 = linalg.generic {indexing_maps = [#w, #w], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e0 : tensor<4x8xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %t = arith.truncf %i : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %u = linalg.generic {indexing_maps = [#w, #r], iterator_types = ["parallel", "reduction"]} ins(%a16 : tensor<4x8xbf16>) outs(%z : tensor<4xf32>) {
  ^bb0(%i: bf16, %o: f32):
    %x = arith.extf %i : bf16 to f32
    %t = arith.addf %o, %x : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<8x4xbf16>
  %c16 = linalg.generic {indexing_maps = [#w, #w], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<8x4xf32>) outs(%e2 : tensor<8x4xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %t = arith.truncf %i : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x4xbf16>
  %e1 = tensor.empty() : tensor<4x8xbf16>
  %b16 = linalg.generic {indexing_maps = [#w, #w], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x8xf32>) outs(%e1 : tensor<4x8xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %t = arith.truncf %i : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %v = linalg.generic {indexing_maps = [#w, #r], iterator_types = ["parallel", "reduction"]} ins(%b16 : tensor<4x8xbf16>) outs(%z : tensor<4xf32>) {
  ^bb0(%i: bf16, %o: f32):
    %x = arith.extf %i : bf16 to f32
    %t = arith.addf %o, %x : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %u, %v, %c16 : tensor<4xf32>, tensor<4xf32>, tensor<8x4xbf16>
}

// -----

// A tensor two members read through equal reshapes of it and the same map
// is one input of the merged op; read through another map (the transpose)
// it stays an input of its own.
#v3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#w3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#t3 = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-LABEL: func.func @views
// HOIST-LABEL: func.func @views
// CHECK: %[[V:.+]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]]
// CHECK: %[[M:.+]]:3 = linalg.generic {{.*}} ins(%[[V]], %arg1 : tensor<4x1x8xf32>, tensor<1x4x8xf32>) outs(
// CHECK: ^bb0(%[[IN:.+]]: f32, %[[T:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK: arith.maximumf %{{.+}}, %[[IN]]
// CHECK: arith.addf %{{.+}}, %[[IN]]
// CHECK: arith.addf %{{.+}}, %[[T]]
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2
func.func @views(%z: tensor<4x8xf32>, %zt: tensor<1x4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %low = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %v1 = tensor.expand_shape %z [[0], [1, 2]] output_shape [4, 1, 8] : tensor<4x8xf32> into tensor<4x1x8xf32>
  %fm = linalg.fill ins(%low : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %max = linalg.generic {indexing_maps = [#v3, #w3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%v1 : tensor<4x1x8xf32>) outs(%fm : tensor<4x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %v2 = tensor.expand_shape %z [[0], [1, 2]] output_shape [4, 1, 8] : tensor<4x8xf32> into tensor<4x1x8xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#v3, #w3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%v2 : tensor<4x1x8xf32>) outs(%fs : tensor<4x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %ft = linalg.fill ins(%zero : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %tsum = linalg.generic {indexing_maps = [#t3, #w3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%zt : tensor<1x4x8xf32>) outs(%ft : tensor<4x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  return %max, %sum, %tsum : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Two split sums over one tensor (a layer norm's dgamma and dbeta partial
// sums over dy, each through its own collapse and expand), each second
// stage right after its first: the first second stage moves past the
// second first stage, so the first stages merge and read dy once (equal
// chains of reshapes are one tensor); the second stages merge after them.
// Without sink-small-readers, or with the partials (16 elements) above
// max-sunk-elements, the first stages stay apart.
#p3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#q3 = affine_map<(d0, d1, d2) -> (d0, d2)>
#p2 = affine_map<(d0, d1) -> (d0, d1)>
#c2 = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @split_sums
// CHECK: %[[DY:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2]] output_shape [4, 4, 4]
// CHECK: %[[X:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2]] output_shape [4, 4, 4]
// CHECK: %[[P:.+]]:2 = linalg.generic {{.*}} ins(%[[DY]], %[[X]] : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(
// CHECK: %[[S:.+]]:2 = linalg.generic {{.*}} ins(%[[P]]#0, %[[P]]#1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%arg2, %arg3 :
// CHECK: return %[[S]]#0, %[[S]]#1
// NOSINK-LABEL: func.func @split_sums
// NOSINK: %[[P1:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// NOSINK: %[[P2:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<4x4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// NOSINK: linalg.generic {{.*}} ins(%[[P1]], %[[P2]] : tensor<4x4xf32>, tensor<4x4xf32>)
func.func @split_sums(%dy: tensor<2x8x4xf32>, %x: tensor<2x8x4xf32>, %o1: tensor<4xf32>, %o2: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %c1 = tensor.collapse_shape %dy [[0, 1], [2]] : tensor<2x8x4xf32> into tensor<16x4xf32>
  %v1 = tensor.expand_shape %c1 [[0, 1], [2]] output_shape [4, 4, 4] : tensor<16x4xf32> into tensor<4x4x4xf32>
  %cx = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x8x4xf32> into tensor<16x4xf32>
  %vx = tensor.expand_shape %cx [[0, 1], [2]] output_shape [4, 4, 4] : tensor<16x4xf32> into tensor<4x4x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p1 = linalg.generic {indexing_maps = [#p3, #p3, #q3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%v1, %vx : tensor<4x4x4xf32>, tensor<4x4x4xf32>) outs(%f1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#p2, #c2], iterator_types = ["reduction", "parallel"]} ins(%p1 : tensor<4x4xf32>) outs(%o1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %c2 = tensor.collapse_shape %dy [[0, 1], [2]] : tensor<2x8x4xf32> into tensor<16x4xf32>
  %v2 = tensor.expand_shape %c2 [[0, 1], [2]] output_shape [4, 4, 4] : tensor<16x4xf32> into tensor<4x4x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p2 = linalg.generic {indexing_maps = [#p3, #q3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%v2 : tensor<4x4x4xf32>) outs(%f2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %s2 = linalg.generic {indexing_maps = [#p2, #c2], iterator_types = ["reduction", "parallel"]} ins(%p2 : tensor<4x4xf32>) outs(%o2 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s1, %s2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A second stage whose result something reads before the second split sum
// does not move (its reader would have to move too): the first stages
// stay apart.
#p3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#q3 = affine_map<(d0, d1, d2) -> (d0, d2)>
#p2 = affine_map<(d0, d1) -> (d0, d1)>
#c2 = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @read_between
// CHECK: %[[P1:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<4x4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK: %[[S1:.+]] = linalg.generic {{.*}} ins(%[[P1]] : tensor<4x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[S1]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<4x4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
func.func @read_between(%dy: tensor<16x4xf32>, %o1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %v = tensor.expand_shape %dy [[0, 1], [2]] output_shape [4, 4, 4] : tensor<16x4xf32> into tensor<4x4x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p1 = linalg.generic {indexing_maps = [#p3, #q3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%v : tensor<4x4x4xf32>) outs(%f1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#p2, #c2], iterator_types = ["reduction", "parallel"]} ins(%p1 : tensor<4x4xf32>) outs(%o1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %u = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%s1 : tensor<4xf32>) outs(%o1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p2 = linalg.generic {indexing_maps = [#p3, #q3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%v : tensor<4x4x4xf32>) outs(%f2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %u, %p2 : tensor<4xf32>, tensor<4x4xf32>
}

// -----

// A second stage that the later split sum itself reads (its scale here)
// does not move past it: the first stages stay apart.
#p3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#q3 = affine_map<(d0, d1, d2) -> (d0, d2)>
#c3 = affine_map<(d0, d1, d2) -> (d2)>
#p2 = affine_map<(d0, d1) -> (d0, d1)>
#c2 = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @read_by_later
// CHECK: %[[P1:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<4x4x4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
// CHECK: %[[S1:.+]] = linalg.generic {{.*}} ins(%[[P1]] : tensor<4x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[S1]] : tensor<4x4x4xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<4x4xf32>)
func.func @read_by_later(%dy: tensor<16x4xf32>, %o1: tensor<4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %v = tensor.expand_shape %dy [[0, 1], [2]] output_shape [4, 4, 4] : tensor<16x4xf32> into tensor<4x4x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p1 = linalg.generic {indexing_maps = [#p3, #q3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%v : tensor<4x4x4xf32>) outs(%f1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %s1 = linalg.generic {indexing_maps = [#p2, #c2], iterator_types = ["reduction", "parallel"]} ins(%p1 : tensor<4x4xf32>) outs(%o1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p2 = linalg.generic {indexing_maps = [#p3, #c3, #q3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%v, %s1 : tensor<4x4x4xf32>, tensor<4xf32>) outs(%f2 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %k: f32, %o: f32):
    %m = arith.mulf %a, %k : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %p2 : tensor<4x4xf32>
}

// -----

// Two column sums of 64 partials each (four operands, 2 x 64 x 8 + 2 x 8
// elements): more than max-operands = 3, and reductions take no more than
// that however small (max-small-operands is for all-parallel groups: a
// merged reduction's threads would fold every member's terms in turn).
#t = affine_map<(d0, d1) -> (d1, d0)>
#o = affine_map<(d0, d1) -> (d0)>
// SUMS-LABEL: func.func @small_sums
// SUMS-COUNT-2: linalg.generic
// SUMS-NOT: linalg.generic
// Within max-operands (24), they merge.
// CHECK-LABEL: func.func @small_sums
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x8xf32>, tensor<64x8xf32>) outs(%arg2, %arg3 : tensor<8xf32>, tensor<8xf32>)
func.func @small_sums(%a: tensor<64x8xf32>, %b: tensor<64x8xf32>, %za: tensor<8xf32>, %zb: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %sa = linalg.generic {indexing_maps = [#t, #o], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<64x8xf32>) outs(%za : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %sb = linalg.generic {indexing_maps = [#t, #o], iterator_types = ["parallel", "reduction"]} ins(%b : tensor<64x8xf32>) outs(%zb : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %sa, %sb : tensor<8xf32>, tensor<8xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
// Two gathered concatenations (each writes one output and reads two
// tensors from above: three parameters of a kernel): six together, more
// than max-operands = 5, so they stay apart; within 24 (the default),
// they merge.
// CAPT-LABEL: func.func @captures
// SUMS-LABEL: func.func @captures
// CAPT-COUNT-2: linalg.generic
// CAPT-NOT: linalg.generic
// CHECK-LABEL: func.func @captures
// CHECK: %{{.+}}:2 = linalg.generic
// CHECK-NOT: linalg.generic
func.func @captures(%a: tensor<1xf32>, %b: tensor<7xf32>, %c: tensor<1xf32>, %d: tensor<7xf32>, %i: index) -> (tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<8xf32>
  %x = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<8xf32>) {
  ^bb0(%o: f32):
    %p = tensor.extract %a[%c0] : tensor<1xf32>
    %q = tensor.extract %b[%c0] : tensor<7xf32>
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<8xf32>) {
  ^bb0(%o: f32):
    %p = tensor.extract %c[%c0] : tensor<1xf32>
    %q = tensor.extract %d[%c0] : tensor<7xf32>
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %x, %y : tensor<8xf32>, tensor<8xf32>
}
