// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse=hoist-argument-only=false | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="hoist-argument-only=false order-updates=false" | FileCheck %s --check-prefix=OFF
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="hoist-argument-only=false order-elements=8" | FileCheck %s --check-prefix=ELEM
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse | FileCheck %s --check-prefix=DEFAULT
// RUN: anvil-opt %s --split-input-file --anvil-horizontal-fuse="hoist-argument-only=false copy-state-reads=false" | FileCheck %s --check-prefix=NOCOPY

// Tests anvil-horizontal-fuse's order-updates (the optimizer's small ops
// and state updates moved to the end of the block by level, where those of
// a level merge), the fills of merged reductions moved to the merged op,
// and, with the default hoist-argument-only, small chains of candidates
// from the block's arguments moved to its start by level.

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
// LAMB's shape for two parameters: each one's moment and update direction
// (u), the squared norm of u, and the parameter's update, which reads
// both. In block order each parameter's ops read the previous one's, so
// nothing merges but the two updates; by level, the two directions merge,
// then the two norms (sums over every loop), then the two updates.
// CHECK-LABEL: func.func @lamb
// CHECK: %[[U:.+]]:4 = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%arg2, %arg4, %arg3, %arg5 : {{.*}}) outs(%arg4, %arg8, %arg5, %arg8 : {{.*}})
// CHECK: %[[N:.+]]:2 = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[U]]#1, %[[U]]#3 : tensor<16xf32>, tensor<16xf32>) outs(%arg6, %arg7 : tensor<f32>, tensor<f32>)
// CHECK: %[[W:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%arg0, %[[U]]#1, %[[N]]#0, %arg1, %[[U]]#3, %[[N]]#1 : {{.*}}) outs(%arg0, %arg1 : {{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.subf
// CHECK-NEXT: linalg.yield
// CHECK: return %[[W]]#0, %[[U]]#0, %[[W]]#1, %[[U]]#2
// Without order-updates, only the first update and the second direction,
// independent, merge.
// With the defaults, the directions (which read only arguments), then the
// norms and updates (small, reading only those and arguments) first go to
// the block's start by level, then to its end: the same three.
// DEFAULT-LABEL: func.func @lamb
// DEFAULT: %[[U:.+]]:4 = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%arg2, %arg4, %arg3, %arg5 :
// DEFAULT: %[[N:.+]]:2 = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[U]]#1, %[[U]]#3 :
// DEFAULT: %[[W:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%arg0, %[[U]]#1, %[[N]]#0, %arg1, %[[U]]#3, %[[N]]#1 :
// DEFAULT-NOT: linalg.generic
// DEFAULT: return %[[W]]#0, %[[U]]#0, %[[W]]#1, %[[U]]#2
// OFF-LABEL: func.func @lamb
// OFF-COUNT-5: linalg.generic
// OFF-NOT: linalg.generic
// With tensors of 16 elements past order-elements = 8, only the updates
// (state updates: every tensor they read a parameter's or small) move:
// the norms merge too, the directions do not.
// ELEM-LABEL: func.func @lamb
// ELEM: linalg.generic {{.*}} ins(%arg2, %arg4 :
// ELEM: linalg.generic {{.*}} ins(%arg3, %arg5 :
// ELEM: %{{.+}}:2 = linalg.generic {{.*}}iterator_types = ["reduction"]
// ELEM: %{{.+}}:2 = linalg.generic {{.*}} ins(%arg0,
// ELEM-NOT: linalg.generic
func.func @lamb(%p1: tensor<16xf32>, %p2: tensor<16xf32>, %g1: tensor<16xf32>, %g2: tensor<16xf32>, %m1: tensor<16xf32>, %m2: tensor<16xf32>, %z1: tensor<f32>, %z2: tensor<f32>, %e: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %u1:2 = linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]} ins(%g1, %m1 : tensor<16xf32>, tensor<16xf32>) outs(%m1, %e : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%g: f32, %m: f32, %o: f32, %o2: f32):
    %a = arith.addf %m, %g : f32
    %d = arith.mulf %a, %a : f32
    linalg.yield %a, %d : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %n1 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%u1#1 : tensor<16xf32>) outs(%z1 : tensor<f32>) {
  ^bb0(%u: f32, %o: f32):
    %q = arith.mulf %u, %u : f32
    %r = arith.addf %o, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %w1 = linalg.generic {indexing_maps = [#v, #v, #s, #v], iterator_types = ["parallel"]} ins(%p1, %u1#1, %n1 : tensor<16xf32>, tensor<16xf32>, tensor<f32>) outs(%p1 : tensor<16xf32>) {
  ^bb0(%p: f32, %u: f32, %n: f32, %o: f32):
    %t = arith.mulf %u, %n : f32
    %r = arith.subf %p, %t : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %u2:2 = linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]} ins(%g2, %m2 : tensor<16xf32>, tensor<16xf32>) outs(%m2, %e : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%g: f32, %m: f32, %o: f32, %o2: f32):
    %a = arith.addf %m, %g : f32
    %d = arith.mulf %a, %a : f32
    linalg.yield %a, %d : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %n2 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%u2#1 : tensor<16xf32>) outs(%z2 : tensor<f32>) {
  ^bb0(%u: f32, %o: f32):
    %q = arith.mulf %u, %u : f32
    %r = arith.addf %o, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %w2 = linalg.generic {indexing_maps = [#v, #v, #s, #v], iterator_types = ["parallel"]} ins(%p2, %u2#1, %n2 : tensor<16xf32>, tensor<16xf32>, tensor<f32>) outs(%p2 : tensor<16xf32>) {
  ^bb0(%p: f32, %u: f32, %n: f32, %o: f32):
    %t = arith.mulf %u, %n : f32
    %r = arith.subf %p, %t : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %w1, %u1#0, %w2, %u2#0 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
// The first norm is also read by an op that does not move (its extract):
// the norm stays, and so does the direction it reads (moved, either would
// come after its reader); the first update, which only the return reads,
// moves to the end with the second parameter's ops (where it merges with
// the second direction, as it would in block order).
// CHECK-LABEL: func.func @read_elsewhere
// OFF-LABEL: func.func @read_elsewhere
// ELEM-LABEL: func.func @read_elsewhere
// CHECK: %[[U1:.+]]:2 = linalg.generic {{.*}} ins(%arg2, %arg4 :
// CHECK: %[[N1:.+]] = linalg.generic {{.*}} ins(%[[U1]]#1 :
// CHECK: tensor.extract %[[N1]]
// CHECK: %[[M:.+]]:3 = linalg.generic {{.*}} ins(%arg0, %[[U1]]#1, %[[N1]], %arg3, %arg5 :
// CHECK: %[[N2:.+]] = linalg.generic {{.*}} ins(%[[M]]#2 :
// CHECK: %[[W2:.+]] = linalg.generic {{.*}} ins(%arg1, %[[M]]#2, %[[N2]] :
// CHECK: return %[[M]]#0, %[[U1]]#0, %[[W2]], %[[M]]#1
func.func @read_elsewhere(%p1: tensor<16xf32>, %p2: tensor<16xf32>, %g1: tensor<16xf32>, %g2: tensor<16xf32>, %m1: tensor<16xf32>, %m2: tensor<16xf32>, %z1: tensor<f32>, %z2: tensor<f32>, %e: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, f32) {
  %u1:2 = linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]} ins(%g1, %m1 : tensor<16xf32>, tensor<16xf32>) outs(%m1, %e : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%g: f32, %m: f32, %o: f32, %o2: f32):
    %a = arith.addf %m, %g : f32
    %d = arith.mulf %a, %a : f32
    linalg.yield %a, %d : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %n1 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%u1#1 : tensor<16xf32>) outs(%z1 : tensor<f32>) {
  ^bb0(%u: f32, %o: f32):
    %q = arith.mulf %u, %u : f32
    %r = arith.addf %o, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %x = tensor.extract %n1[] : tensor<f32>
  %w1 = linalg.generic {indexing_maps = [#v, #v, #s, #v], iterator_types = ["parallel"]} ins(%p1, %u1#1, %n1 : tensor<16xf32>, tensor<16xf32>, tensor<f32>) outs(%p1 : tensor<16xf32>) {
  ^bb0(%p: f32, %u: f32, %n: f32, %o: f32):
    %t = arith.mulf %u, %n : f32
    %r = arith.subf %p, %t : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %u2:2 = linalg.generic {indexing_maps = [#v, #v, #v, #v], iterator_types = ["parallel"]} ins(%g2, %m2 : tensor<16xf32>, tensor<16xf32>) outs(%m2, %e : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%g: f32, %m: f32, %o: f32, %o2: f32):
    %a = arith.addf %m, %g : f32
    %d = arith.mulf %a, %a : f32
    linalg.yield %a, %d : f32, f32
  } -> (tensor<16xf32>, tensor<16xf32>)
  %n2 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%u2#1 : tensor<16xf32>) outs(%z2 : tensor<f32>) {
  ^bb0(%u: f32, %o: f32):
    %q = arith.mulf %u, %u : f32
    %r = arith.addf %o, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %w2 = linalg.generic {indexing_maps = [#v, #v, #s, #v], iterator_types = ["parallel"]} ins(%p2, %u2#1, %n2 : tensor<16xf32>, tensor<16xf32>, tensor<f32>) outs(%p2 : tensor<16xf32>) {
  ^bb0(%p: f32, %u: f32, %n: f32, %o: f32):
    %t = arith.mulf %u, %n : f32
    %r = arith.subf %p, %t : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %w1, %u1#0, %w2, %u2#0, %x : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, f32
}

// -----

#r = affine_map<(d0, d1) -> (d0, d1)>
#o = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
// Two row sums that merge, ops that stay between them: each one's fill
// moves to the merged op, where anvil-outline-dispatches folds both into
// its launch.
// CHECK-LABEL: func.func @fills
// CHECK: linalg.generic {{.*}} ins(%arg2 : tensor<3xf32>)
// CHECK: tensor.extract
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// OFF-LABEL: func.func @fills
// OFF: linalg.generic {{.*}} ins(%arg2 : tensor<3xf32>)
// OFF: tensor.extract
// OFF-NEXT: linalg.fill
// OFF-NEXT: linalg.fill
// OFF-NEXT: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
func.func @fills(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<3xf32>, %i: index) -> (tensor<4xf32>, f32, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r1 = linalg.generic {indexing_maps = [#r, #o], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f1 : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %n = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%c : tensor<3xf32>) outs(%c : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %first = tensor.extract %n[%i] : tensor<3xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r2 = linalg.generic {indexing_maps = [#r, #o], iterator_types = ["parallel", "reduction"]} ins(%b : tensor<4x8xf32>) outs(%f2 : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r1, %first, %r2 : tensor<4xf32>, f32, tensor<4xf32>
}

// -----

#t = affine_map<(d0, d1) -> (d0, d1)>
#c = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
// A column sum (a split bias gradient's second stage: a reduction over
// some loops only) that only an update reads stays where it is; the
// update, already last, stays last.
// CHECK-LABEL: func.func @second_stage
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: tensor.extract
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-NEXT: ^bb0
func.func @second_stage(%partials: tensor<4x16xf32>, %z: tensor<16xf32>, %p: tensor<16xf32>, %c: tensor<3xf32>, %i: index) -> (tensor<16xf32>, f32) {
  %s = linalg.generic {indexing_maps = [#t, #c], iterator_types = ["reduction", "parallel"]} ins(%partials : tensor<4x16xf32>) outs(%z : tensor<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %x = tensor.extract %c[%i] : tensor<3xf32>
  %w = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%p, %s : tensor<16xf32>, tensor<16xf32>) outs(%p : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %w, %x : tensor<16xf32>, f32
}

// -----

#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
#scalar = affine_map<() -> ()>
// FP8's delayed recipe for two tensors: each amax history's maximum (from
// a -inf fill), the scale from it and the previous scale, and the scaled
// tensor, which reads the scale. In block order the scale closes the
// maximum's group (order-updates alone moves only the scaled tensors: five
// generics, the fills', both maxima, the scales and the scaled tensors);
// with the defaults, the maxima
// (reading arguments and fills) move to the block's start, then the
// scales (small, reading only those and arguments), each kind merging
// there (the fills, too, as one generic: hoistFullReductionFills), and the
// scaled tensors (updates of returned state) to the end.
// DEFAULT-LABEL: func.func @histories
// DEFAULT: linalg.generic {{.*}}iterator_types = []} outs(
// DEFAULT: %[[M:.+]]:2 = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%arg0, %arg1 : tensor<16xf32>, tensor<16xf32>)
// DEFAULT: %[[S:.+]]:2 = linalg.generic {{.*}}iterator_types = []} ins(%[[M]]#0, %arg2, %[[M]]#1, %arg3 :
// DEFAULT: %[[Q:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%arg4, %[[S]]#0, %arg5, %[[S]]#1 :
// DEFAULT-NOT: linalg.generic
// DEFAULT: return %[[S]]#0, %[[S]]#1, %[[Q]]#0, %[[Q]]#1
// CHECK-LABEL: func.func @histories
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: linalg.generic
func.func @histories(%h1: tensor<16xf32>, %h2: tensor<16xf32>, %s1: tensor<f32>, %s2: tensor<f32>, %x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %c448 = arith.constant 448.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m1 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%h1 : tensor<16xf32>) outs(%f1 : tensor<f32>) {
  ^bb0(%h: f32, %o: f32):
    %r = arith.maximumf %h, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %n1 = linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []} ins(%m1, %s1 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%m: f32, %p: f32, %o: f32):
    %d = arith.divf %c448, %m : f32
    %pos = arith.cmpf ogt, %m, %zero : f32
    %r = arith.select %pos, %d, %p : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %q1 = linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]} ins(%x, %n1 : tensor<8xf32>, tensor<f32>) outs(%x : tensor<8xf32>) {
  ^bb0(%a: f32, %n: f32, %o: f32):
    %r = arith.mulf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m2 = linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%h2 : tensor<16xf32>) outs(%f2 : tensor<f32>) {
  ^bb0(%h: f32, %o: f32):
    %r = arith.maximumf %h, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %n2 = linalg.generic {indexing_maps = [#scalar, #scalar, #scalar], iterator_types = []} ins(%m2, %s2 : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%m: f32, %p: f32, %o: f32):
    %d = arith.divf %c448, %m : f32
    %pos = arith.cmpf ogt, %m, %zero : f32
    %r = arith.select %pos, %d, %p : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %q2 = linalg.generic {indexing_maps = [#v, #s, #v], iterator_types = ["parallel"]} ins(%y, %n2 : tensor<8xf32>, tensor<f32>) outs(%y : tensor<8xf32>) {
  ^bb0(%a: f32, %n: f32, %o: f32):
    %r = arith.mulf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %n1, %n2, %q1, %q2 : tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
// Two amax history rolls (new[i] = i == 0 ? amax : old[i - 1]), each
// returned tied to its history: the slice each reads from the history it
// overwrites is copied by a generic right before it, and the copies merge,
// as do the rolls. A roll returned untied (%h3's, the result not marked)
// reads its slice as it did: nothing overwrites it.
// CHECK-LABEL: func.func @rolls
// CHECK-DAG: %[[S1:.+]] = tensor.extract_slice %arg0[0] [15] [1]
// CHECK-DAG: %[[S2:.+]] = tensor.extract_slice %arg1[0] [15] [1]
// CHECK: %[[C:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%[[S1]], %[[S2]] : tensor<15xf32>, tensor<15xf32>)
// CHECK: linalg.yield %{{.+}}, %{{.+}} : f32, f32
// CHECK: %[[S3:.+]] = tensor.extract_slice %arg2[0] [15] [1]
// CHECK: %[[R:.+]]:3 = linalg.generic {{.*}}iterator_types = ["parallel"]}
// CHECK-DAG: tensor.extract %[[C]]#0[
// CHECK-DAG: tensor.extract %[[C]]#1[
// CHECK-DAG: tensor.extract %[[S3]][
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
// NOCOPY-LABEL: func.func @rolls
// NOCOPY-NOT: ins(%extracted_slice
// NOCOPY: linalg.generic {{.*}}iterator_types = ["parallel"]}
// NOCOPY-NOT: linalg.generic
// NOCOPY: return
func.func @rolls(%h1: tensor<16xf32>, %h2: tensor<16xf32>, %h3: tensor<16xf32>, %a1: f32, %a2: f32, %a3: f32) -> (tensor<16xf32> {anvil.tied_to = 0 : i64}, tensor<16xf32> {anvil.tied_to = 1 : i64}, tensor<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c14 = arith.constant 14 : index
  %e = tensor.empty() : tensor<16xf32>
  %s1 = tensor.extract_slice %h1[0] [15] [1] : tensor<16xf32> to tensor<15xf32>
  %r1 = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %p = arith.subi %i, %c1 : index
    %lo = arith.maxsi %p, %c0 : index
    %j = arith.minsi %lo, %c14 : index
    %old = tensor.extract %s1[%j] : tensor<15xf32>
    %first = arith.cmpi slt, %i, %c1 : index
    %r = arith.select %first, %a1, %old : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %s2 = tensor.extract_slice %h2[0] [15] [1] : tensor<16xf32> to tensor<15xf32>
  %r2 = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %p = arith.subi %i, %c1 : index
    %lo = arith.maxsi %p, %c0 : index
    %j = arith.minsi %lo, %c14 : index
    %old = tensor.extract %s2[%j] : tensor<15xf32>
    %first = arith.cmpi slt, %i, %c1 : index
    %r = arith.select %first, %a2, %old : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %s3 = tensor.extract_slice %h3[0] [15] [1] : tensor<16xf32> to tensor<15xf32>
  %r3 = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %p = arith.subi %i, %c1 : index
    %lo = arith.maxsi %p, %c0 : index
    %j = arith.minsi %lo, %c14 : index
    %old = tensor.extract %s3[%j] : tensor<15xf32>
    %first = arith.cmpi slt, %i, %c1 : index
    %r = arith.select %first, %a3, %old : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %r1, %r2, %r3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
// The state itself read at another point (a reversal): copied whole.
// CHECK-LABEL: func.func @reverse
// CHECK: %[[C:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<16xf32>)
// CHECK: linalg.generic
// CHECK: tensor.extract %[[C]][
func.func @reverse(%h: tensor<16xf32>) -> (tensor<16xf32> {anvil.tied_to = 0 : i64}) {
  %c15 = arith.constant 15 : index
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = arith.subi %c15, %i : index
    %x = tensor.extract %h[%j] : tensor<16xf32>
    linalg.yield %x : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
// The state read again after its update (here, negated; the two merge):
// bufferization does not update it in place, so no copy is made.
// CHECK-LABEL: func.func @read_after
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<16xf32>)
// CHECK: tensor.extract %arg0[
// CHECK-NOT: linalg.generic
func.func @read_after(%h: tensor<16xf32>) -> (tensor<16xf32> {anvil.tied_to = 0 : i64}, tensor<16xf32>) {
  %c15 = arith.constant 15 : index
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]} outs(%e : tensor<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = arith.subi %c15, %i : index
    %x = tensor.extract %h[%j] : tensor<16xf32>
    linalg.yield %x : f32
  } -> tensor<16xf32>
  %n = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%h : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.negf %a : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r, %n : tensor<16xf32>, tensor<16xf32>
}
