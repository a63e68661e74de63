// RUN: anvil-opt %s --split-input-file --anvil-fuse=merge-cheap-readers=1 | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-fuse | FileCheck %s --check-prefix=OFF

// Tests anvil-fuse's merge-cheap-readers: a cheap elementwise reader (a
// cast) of a producer that stays written for other readers becomes one
// more result of the producer's kernel.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#red = affine_map<(d0, d1) -> (d1)>

// A gradient written in f32 for a column sum and returned, and cast to
// bf16: one generic writes both; the cast does not read the f32 back.
// CHECK-LABEL: func.func @gradient_and_cast
// CHECK: %[[M:.+]]:2 = linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<8x16xf32>, tensor<16xf32>) outs(%{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<8x16xbf16>)
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: linalg.yield %{{.+}}, %{{.+}} : f32, bf16
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%[[M]]#0 :
// CHECK: return %[[M]]#0, %[[M]]#1, %{{.+}} :
// OFF-LABEL: func.func @gradient_and_cast
// OFF: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x16xf32>)
// OFF: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x16xbf16>)
func.func @gradient_and_cast(%x: tensor<8x16xf32>, %g: tensor<16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xbf16>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : tensor<8x16xf32>, tensor<16xf32>)
      outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%es : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red],
                         iterator_types = ["reduction", "parallel"]}
      ins(%d : tensor<8x16xf32>) outs(%f : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<16xf32>
  %eb = tensor.empty() : tensor<8x16xbf16>
  %c = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<8x16xf32>) outs(%eb : tensor<8x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  return %d, %c, %sum : tensor<8x16xf32>, tensor<8x16xbf16>, tensor<16xf32>
}

// -----

// Not merged: a reader of more than 2 units of work (an exponential), a
// reader through a transpose, and a reader that needs a value made after
// the producer (a reduction's result).
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @kept_apart
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: linalg.generic
func.func @kept_apart(%x: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8x8xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x8xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t2 = arith.addf %a, %o : f32
    linalg.yield %t2 : f32
  } -> tensor<8xf32>
  %late = linalg.generic {indexing_maps = [#id, #row, #id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%d, %s : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.subf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<8x8xf32>
  return %d, %exp, %t, %late : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Not merged either: a reader whose body uses a value made between the
// producer and it (a scalar read from a tensor).
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @captured
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x16xf32>)
// CHECK: tensor.extract
// CHECK: linalg.generic {{.+}} outs(%{{.+}} : tensor<8x16xf32>)
func.func @captured(%x: tensor<8x16xf32>, %t: tensor<f32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%es : tensor<16xf32>) -> tensor<16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red],
                         iterator_types = ["reduction", "parallel"]}
      ins(%d : tensor<8x16xf32>) outs(%f : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %scale = tensor.extract %t[] : tensor<f32>
  %c = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %scale : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %d, %c, %sum : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>
}
