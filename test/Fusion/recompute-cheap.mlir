// RUN: anvil-opt %s --split-input-file --anvil-fuse=recompute-cheap=1 | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-fuse | FileCheck %s --check-prefix=OFF

// Tests anvil-fuse's recompute-cheap: a cheap elementwise producer of
// several consumers is computed inside each of them instead of written.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#rowb = affine_map<(d0, d1) -> (d0, 0)>

// The bf16 rounding of a GEMM's product (truncf, extf), read by a row
// maximum and by the subtraction of it: both consumers round x themselves;
// no kernel writes the rounded tensor.
// CHECK-LABEL: func.func @rounding
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: arith.extf
// CHECK-NEXT: arith.maximumf
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.truncf
// CHECK-NEXT: arith.extf
// CHECK-NEXT: arith.subf
// CHECK-NOT: linalg.generic
// CHECK: return
// Without the option the rounded tensor is a generic of its own.
// OFF-LABEL: func.func @rounding
// OFF-COUNT-3: linalg.generic
func.func @rounding(%x: tensor<8x512xf32>) -> tensor<8x512xf32> {
  %e = tensor.empty() : tensor<8x512xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x512xf32>) outs(%e : tensor<8x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.truncf %a : f32 to bf16
    %w = arith.extf %t : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<8x512xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %me = tensor.empty() : tensor<8xf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%r : tensor<8x512xf32>) outs(%mf : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %o : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %m : tensor<8x512xf32>, tensor<8xf32>) outs(%e : tensor<8x512xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.subf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<8x512xf32>
  return %s : tensor<8x512xf32>
}

// -----

// Left as they are: a producer with an exponential (not cheap), one that
// reads its input transposed, and a sum of two full-size inputs read by 4
// consumers (recomputing reads 3 x 8 bytes more a point than writing 4
// bytes and reading them back would save). With two consumers, the sum is
// copied into each (@two_users).
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-9: linalg.generic
// CHECK-NOT: linalg.generic
func.func @left_alone(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = tensor.empty() : tensor<64x64xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %tr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %u1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %tr : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %u2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %tr : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sqrt %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %s3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %s4 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.tanh %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  return %u1, %u2, %s1, %s2, %s3, %s4 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @two_users
// CHECK-COUNT-2: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @two_users
// OFF-COUNT-3: linalg.generic
func.func @two_users(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = tensor.empty() : tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sqrt %a : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  return %s1, %s2 : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Copies that do not fuse after all merge back: a one-hot that two row
// reductions read alone (upstream fusion would leave their reduction loop
// without an operand that bounds it), so it stays one generic, written
// once, and no mark is left.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @unfused_copies
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK-NOT: anvil.recompute_copy_of
// CHECK: return
func.func @unfused_copies(%l: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8x256xf32>
  %oh = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<8xi32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%a: i32, %o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %a, %c : i32
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x256xf32>
  %z = arith.constant 0.0 : f32
  %me = tensor.empty() : tensor<8xf32>
  %mf = linalg.fill ins(%z : f32) outs(%me : tensor<8xf32>) -> tensor<8xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%oh : tensor<8x256xf32>) outs(%mf : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.addf %a, %o : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%oh : tensor<8x256xf32>) outs(%mf : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %o : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %s1, %s2 : tensor<8xf32>, tensor<8xf32>
}
