// RUN: anvil-opt %s --split-input-file --anvil-fuse | FileCheck %s

// Tests anvil-fuse's merge of returned producers: an elementwise producer
// whose result the function returns (updated state, written anyway) and
// one generic also reads becomes more results of that generic. AdamW's m
// and v updates and the parameter update that reads them: one generic
// that reads p, m, v and g once and writes the three.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @adam
// CHECK: %[[R:.+]]:3 = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel"]} ins(%arg2, %arg3, %arg1, %arg0 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%{{.+}}, %{{.+}}, %{{.+}} : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK: arith.mulf
// CHECK: math.sqrt
// CHECK: arith.subf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#2, %[[R]]#1, %[[R]]#0
func.func @adam(%p: tensor<64xf32>, %m: tensor<64xf32>, %v: tensor<64xf32>, %g: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %c1 = arith.constant 0.9 : f32
  %c2 = arith.constant 0.999 : f32
  %lr = arith.constant 0.001 : f32
  %e0 = tensor.empty() : tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %c1 : f32
    %1 = arith.addf %0, %b : f32
    linalg.yield %1 : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %v2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%v, %g : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %b, %b : f32
    %1 = arith.mulf %a, %c2 : f32
    %2 = arith.addf %1, %0 : f32
    linalg.yield %2 : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %p2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]} ins(%p, %m2, %v2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %0 = math.sqrt %c : f32
    %1 = arith.divf %b, %0 : f32
    %2 = arith.mulf %1, %lr : f32
    %3 = arith.subf %a, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<64xf32>
  return %p2, %m2, %v2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Not merged: the producer is returned and read by two generics (merging
// it into one would leave the other reading the merged result: no gain).
// CHECK-LABEL: func.func @two_readers
// CHECK-COUNT-3: linalg.generic
func.func @two_readers(%m: tensor<64xf32>, %g: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e0 = tensor.empty() : tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%m2 : tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = math.exp %a : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%m2 : tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = math.log %a : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  return %m2, %x, %y : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>
#bc = affine_map<(d0) -> ()>

// A producer of two results (the consumer reads the second), a consumer of
// two (its second output is an argument): one generic of four results, in
// the producer's results' order first.
// CHECK-LABEL: func.func @multi
// CHECK: %[[R:.+]]:4 = linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3
func.func @multi(%m: tensor<64xf32>, %g: tensor<64xf32>, %p: tensor<64xf32>, %s: tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %e0 = tensor.empty() : tensor<64xf32>
  %e1 = tensor.empty() : tensor<64xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e0, %e1 : tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32, %o2: f32):
    %0 = arith.addf %a, %b : f32
    %1 = arith.subf %a, %b : f32
    linalg.yield %0, %1 : f32, f32
  } -> (tensor<64xf32>, tensor<64xf32>)
  %e2 = tensor.empty() : tensor<64xf32>
  %c:2 = linalg.generic {indexing_maps = [#bc, #id, #id, #id, #id], iterator_types = ["parallel"]} ins(%s, %p, %r#1 : tensor<f32>, tensor<64xf32>, tensor<64xf32>) outs(%e2, %p : tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%x: f32, %a: f32, %b: f32, %o: f32, %o2: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.mulf %x, %b : f32
    linalg.yield %0, %1 : f32, f32
  } -> (tensor<64xf32>, tensor<64xf32>)
  return %r#0, %r#1, %c#0, %c#1 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Not merged: the producer's result leaves through a region (an scf.if)
// between it and its reader, which the merged op would not dominate.
// CHECK-LABEL: func.func @nested
// CHECK-COUNT-2: linalg.generic
func.func @nested(%m: tensor<64xf32>, %g: tensor<64xf32>, %cond: i1) -> (tensor<64xf32>, tensor<64xf32>) {
  %e0 = tensor.empty() : tensor<64xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %sel = scf.if %cond -> tensor<64xf32> {
    scf.yield %m2 : tensor<64xf32>
  } else {
    scf.yield %g : tensor<64xf32>
  }
  %e1 = tensor.empty() : tensor<64xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m2, %sel : tensor<64xf32>, tensor<64xf32>) outs(%e1 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = math.exp %a : f32
    %1 = arith.addf %0, %b : f32
    linalg.yield %1 : f32
  } -> tensor<64xf32>
  return %sel, %x : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Not merged: the reader reads the producer's result transposed.
// CHECK-LABEL: func.func @transposed
// CHECK-COUNT-2: linalg.generic
func.func @transposed(%m: tensor<8x8xf32>, %g: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e0 = tensor.empty() : tensor<8x8xf32>
  %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %g : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e0 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xf32>
  %x = linalg.generic {indexing_maps = [#t, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%m2, %g : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e1 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<8x8xf32>
  return %m2, %x : tensor<8x8xf32>, tensor<8x8xf32>
}
