// RUN: anvil-opt %s --split-input-file --anvil-fuse=recompute-cheap=1 | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-fuse | FileCheck %s --check-prefix=OFF
// RUN: anvil-opt %s --split-input-file --anvil-fuse=recompute-cheap=1 | FileCheck %s --check-prefix=EXP

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

// Left as they are: a producer that reads its input transposed, and a sum
// of two full-size inputs read by 4 consumers (recomputing reads 3 x 8
// bytes more a point than writing 4 bytes and reading them back would
// save). With two consumers, the sum is copied into each (@two_users). The
// exponential, read by two consumers, is copied into each (its work, 8, is
// below the 64 bits a point saves).
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-8: linalg.generic
// CHECK-NOT: linalg.generic
// EXP-LABEL: func.func @left_alone
// EXP: math.exp
// EXP-NEXT: arith.mulf
// EXP: math.exp
// EXP-NEXT: arith.subf
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

// Math functions count 8 ops each: a producer of more than 6 is copied when
// each copy's work is at most the bits a point saves. A tanh-GELU's
// gradient (28: 20 ops and a tanh) of two bf16 inputs and a bias, read by
// a cast and a column sum (as the MLP's backward reads it), saves 64 bits
// a point (an f32 written and read twice, against 2 bf16 read once more):
// computed in both. Four math functions (32) of one f32 read by 4
// consumers would save 64 bits a point for 3 x 32 of work: written once.
// CHECK-LABEL: func.func @math
// CHECK-NOT: -> tensor<64x32xf32>
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%arg1, %arg0, %arg2 : tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<32xf32>)
// CHECK: math.tanh
// CHECK: arith.truncf
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]} ins(%arg1, %arg0, %arg2 : tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<32xf32>)
// CHECK: math.tanh
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @math_four_users
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @math(%x: tensor<64x32xbf16>, %g: tensor<64x32xbf16>, %b: tensor<32xf32>) -> (tensor<64x32xbf16>, tensor<32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %grad = linalg.generic {indexing_maps = [#id2, #id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%g, %x, %b : tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%gi: bf16, %xi: bf16, %bi: f32, %o: f32):
    %c0 = arith.constant 4.471500e-02 : f32
    %c1 = arith.constant 0.797884583 : f32
    %c2 = arith.constant 1.341450e-01 : f32
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32
    %xe = arith.extf %xi : bf16 to f32
    %u = arith.addf %xe, %bi : f32
    %u2 = arith.mulf %u, %u : f32
    %u3 = arith.mulf %u2, %u : f32
    %a = arith.mulf %u3, %c0 : f32
    %inner = arith.addf %u, %a : f32
    %arg = arith.mulf %inner, %c1 : f32
    %t = math.tanh %arg : f32
    %d0 = arith.mulf %u2, %c2 : f32
    %d1 = arith.addf %d0, %one : f32
    %d2 = arith.mulf %d1, %c1 : f32
    %t2 = arith.mulf %t, %t : f32
    %s = arith.subf %one, %t2 : f32
    %ds = arith.mulf %s, %d2 : f32
    %hu = arith.mulf %u, %half : f32
    %p = arith.mulf %hu, %ds : f32
    %q = arith.addf %t, %one : f32
    %r = arith.mulf %q, %half : f32
    %dg = arith.addf %r, %p : f32
    %ge = arith.extf %gi : bf16 to f32
    %v = arith.mulf %ge, %dg : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %e16 = tensor.empty() : tensor<64x32xbf16>
  %cast = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%grad : tensor<64x32xf32>) outs(%e16 : tensor<64x32xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %v = arith.truncf %a : f32 to bf16
    linalg.yield %v : bf16
  } -> tensor<64x32xbf16>
  %zero = arith.constant 0.0 : f32
  %e32 = tensor.empty() : tensor<32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e32 : tensor<32xf32>) -> tensor<32xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%grad : tensor<64x32xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %o, %a : f32
    linalg.yield %v : f32
  } -> tensor<32xf32>
  return %cast, %sum : tensor<64x32xbf16>, tensor<32xf32>
}

func.func @math_four_users(%x: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %h = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    %l = math.exp %t : f32
    %s = math.sin %l : f32
    %v = math.cos %s : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r3 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.subf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  return %r0, %r1, %r2, %r3 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// A bf16 tensor widened to f32 and read by 6 consumers (a gradient that a
// layer norm's backward reads several times): each widens it itself, so
// the f32 tensor is never written (7 x 32 bits saved a point against 5 x 16
// read again).
// CHECK-LABEL: func.func @six_users
// CHECK-COUNT-6: linalg.generic {{.+}} ins(%arg0 : tensor<64x32xbf16>)
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @six_users
// OFF-COUNT-7: linalg.generic
#id3 = affine_map<(d0, d1) -> (d0, d1)>
func.func @six_users(%x: tensor<64x32xbf16>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %w = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xbf16>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %v = arith.extf %a : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r0 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r3 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r4 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r5 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

// -----

// The bounds: a widening read by 8 readers is copied into each, one read by
// 9 is written once; a remainder (a loop per point in libm) is never
// copied, even for 2 readers that would save bytes.
// CHECK-LABEL: func.func @eight_users
// CHECK-COUNT-8: linalg.generic {{.+}} ins(%arg0 : tensor<64x32xbf16>)
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @nine_users
// CHECK-COUNT-10: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @remainder
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
#id4 = affine_map<(d0, d1) -> (d0, d1)>
func.func @eight_users(%x: tensor<64x32xbf16>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %w = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xbf16>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %v = arith.extf %a : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r0 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r3 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r4 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r5 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r6 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r7 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

func.func @nine_users(%x: tensor<64x32xbf16>) -> (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %w = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xbf16>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %v = arith.extf %a : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r0 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r2 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r3 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r4 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r5 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r6 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r7 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r8 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
}

func.func @remainder(%x: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>) {
  %e = tensor.empty() : tensor<64x32xf32>
  %w = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 3.0 : f32
    %v = arith.remf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r0 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %r1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  return %r0, %r1 : tensor<64x32xf32>, tensor<64x32xf32>
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

// -----

// A layer norm's centered x (x - mean) and normalized x (times rstd), each
// read by row reductions through a (4, 32, 1, 64) view (the variance, and
// a backward sum) as well as elementwise: the views' readers get copies
// built over their loops (the rows' unit loop read by no operand), so
// neither tensor is written: every kernel reads x and the row statistics.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#red4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {indexing_maps = [#[[X4:.+]], #[[R4:.+]], #[[O4:.+]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 :
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.+}} ins(%arg0, %arg1,
// CHECK: arith.subf
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1,
// CHECK: arith.subf
// CHECK: linalg.generic {{.+}} iterator_types = ["reduction", "reduction", "parallel"]} ins(%arg4, %arg0, %arg1,
// CHECK: arith.subf
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg4, %arg0, %arg1,
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
// CHECK: return
// EXP-DAG: #[[X4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// EXP-DAG: #[[R4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0)>
// Without the option both are written.
// OFF-LABEL: func.func @layer_norm
// OFF: %[[C:.+]] = linalg.generic {{.+}} ins(%arg0, %arg1 :
// OFF: tensor.expand_shape %[[C]]
// OFF: %[[H:.+]] = linalg.generic {{.+}} ins(%[[C]],
// OFF: tensor.expand_shape %[[H]]
func.func @layer_norm(%x: tensor<4x32x64xf32>, %mean: tensor<4x32x1xf32>,
                      %g: tensor<64xf32>, %b: tensor<64xf32>,
                      %dy: tensor<4x32x64xf32>)
    -> (tensor<4x32x64xbf16>, tensor<4x32x1xf32>, tensor<64xf32>,
        tensor<4x32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x64xf32>
  %er = tensor.empty() : tensor<4x32x1xf32>
  %c = linalg.generic {indexing_maps = [#id3, #row3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mean : tensor<4x32x64xf32>, tensor<4x32x1xf32>)
      outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x32x64xf32>
  %cv = tensor.expand_shape %c [[0], [1, 2], [3]] output_shape [4, 32, 1, 64]
      : tensor<4x32x64xf32> into tensor<4x32x1x64xf32>
  %fv = linalg.fill ins(%zero : f32) outs(%er : tensor<4x32x1xf32>) -> tensor<4x32x1xf32>
  %var = linalg.generic {indexing_maps = [#id4, #red4],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%cv : tensor<4x32x1x64xf32>) outs(%fv : tensor<4x32x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x32x1xf32>
  %xh = linalg.generic {indexing_maps = [#id3, #row3, #id3],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %var : tensor<4x32x64xf32>, tensor<4x32x1xf32>)
      outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %s = arith.mulf %a, %r : f32
    linalg.yield %s : f32
  } -> tensor<4x32x64xf32>
  %eb = tensor.empty() : tensor<4x32x64xbf16>
  %y = linalg.generic {indexing_maps = [#id3, #col3, #col3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%xh, %g, %b : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
      outs(%eb : tensor<4x32x64xbf16>) {
  ^bb0(%a: f32, %gg: f32, %bb: f32, %o: bf16):
    %m = arith.mulf %a, %gg : f32
    %s = arith.addf %m, %bb : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x32x64xbf16>
  %xv = tensor.expand_shape %xh [[0], [1, 2], [3]] output_shape [4, 32, 1, 64]
      : tensor<4x32x64xf32> into tensor<4x32x1x64xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<4x32x1xf32>) -> tensor<4x32x1xf32>
  %r = linalg.generic {indexing_maps = [#id4, #red4],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xv : tensor<4x32x1x64xf32>) outs(%fr : tensor<4x32x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x32x1xf32>
  %eg = tensor.empty() : tensor<64xf32>
  %fg = linalg.fill ins(%zero : f32) outs(%eg : tensor<64xf32>) -> tensor<64xf32>
  %gg = linalg.generic {indexing_maps = [#id3, #id3, #col3],
                        iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %xh : tensor<4x32x64xf32>, tensor<4x32x64xf32>)
      outs(%fg : tensor<64xf32>) {
  ^bb0(%a: f32, %h: f32, %o: f32):
    %m = arith.mulf %a, %h : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #row3, #id3],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %xh, %r : tensor<4x32x64xf32>, tensor<4x32x64xf32>, tensor<4x32x1xf32>)
      outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%a: f32, %h: f32, %rr: f32, %o: f32):
    %m = arith.mulf %h, %rr : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x32x64xf32>
  return %y, %r, %gg, %dx
      : tensor<4x32x64xbf16>, tensor<4x32x1xf32>, tensor<64xf32>, tensor<4x32x64xf32>
}

// -----

// A producer read only through unit expansions, by two row reductions
// that keep the unit dimension: each gets its copy over its own loops and
// fuses it, and the producer goes. A broadcast of a scalar alone stays as
// it was: a row sum that read only the scalar would not know its rows'
// length, so fusion would refuse the copies.
#bc = affine_map<(d0, d1) -> (0, 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#e3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k3 = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @only_expansions
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0, %arg1 :
// CHECK: arith.subf
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0, %arg1 :
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @scalar_broadcast
// CHECK: %[[B:.+]] = linalg.generic {{.+}} ins(%arg0 : tensor<1x1xf32>)
// CHECK: tensor.expand_shape %[[B]]
// CHECK: tensor.expand_shape %[[B]]
func.func @only_expansions(%x: tensor<4x32xf32>, %s: tensor<1x1xf32>)
    -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %b = linalg.generic {indexing_maps = [#id2, #bc, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<4x32xf32>, tensor<1x1xf32>)
      outs(%e : tensor<4x32xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %n = arith.subf %a, %c : f32
    linalg.yield %n : f32
  } -> tensor<4x32xf32>
  %x1 = tensor.expand_shape %b [[0], [1, 2]] output_shape [4, 32, 1]
      : tensor<4x32xf32> into tensor<4x32x1xf32>
  %x2 = tensor.expand_shape %b [[0], [1, 2]] output_shape [4, 32, 1]
      : tensor<4x32xf32> into tensor<4x32x1xf32>
  %er = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#e3, #k3],
                         iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x1 : tensor<4x32x1xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<4x1xf32>
  %max = linalg.generic {indexing_maps = [#e3, #k3],
                         iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x2 : tensor<4x32x1xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<4x1xf32>
  return %sum, %max : tensor<4x1xf32>, tensor<4x1xf32>
}
func.func @scalar_broadcast(%s: tensor<1x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %b = linalg.generic {indexing_maps = [#bc, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<1x1xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x32xf32>
  %x1 = tensor.expand_shape %b [[0], [1, 2]] output_shape [4, 32, 1]
      : tensor<4x32xf32> into tensor<4x32x1xf32>
  %x2 = tensor.expand_shape %b [[0], [1, 2]] output_shape [4, 32, 1]
      : tensor<4x32xf32> into tensor<4x32x1xf32>
  %er = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#e3, #k3],
                         iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x1 : tensor<4x32x1xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<4x1xf32>
  %max = linalg.generic {indexing_maps = [#e3, #k3],
                         iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x2 : tensor<4x32x1xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<4x1xf32>
  return %sum, %max : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// No copy over an expansion's loops for a producer that reads a loop
// index (linalg.index would name the wrong loop) or writes through a
// transpose (its loops are not its result's dimensions): the reduction
// reads the written tensor through the expansion, as before.
#id3i = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3i = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#id4i = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#red4i = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#bcp = affine_map<(d0, d1) -> (0, 0)>
#idp = affine_map<(d0, d1) -> (d0, d1)>
#trp = affine_map<(d0, d1) -> (d1, d0)>
#e3p = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k3p = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @reads_an_index
// CHECK: %[[C:.+]] = linalg.generic
// CHECK: linalg.index 2
// CHECK: tensor.expand_shape %[[C]]
// CHECK-LABEL: func.func @transposed_write
// CHECK: %[[B:.+]] = linalg.generic
// CHECK: tensor.expand_shape %[[B]]
func.func @reads_an_index(%x: tensor<4x32x64xf32>, %mean: tensor<4x32x1xf32>)
    -> (tensor<4x32x1xf32>, tensor<4x32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32x64xf32>
  %er = tensor.empty() : tensor<4x32x1xf32>
  %c = linalg.generic {indexing_maps = [#id3i, #row3i, #id3i],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mean : tensor<4x32x64xf32>, tensor<4x32x1xf32>)
      outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %i = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %s = arith.subf %a, %m : f32
    %t = arith.mulf %s, %fi : f32
    linalg.yield %t : f32
  } -> tensor<4x32x64xf32>
  %cv = tensor.expand_shape %c [[0], [1, 2], [3]] output_shape [4, 32, 1, 64]
      : tensor<4x32x64xf32> into tensor<4x32x1x64xf32>
  %fv = linalg.fill ins(%zero : f32) outs(%er : tensor<4x32x1xf32>) -> tensor<4x32x1xf32>
  %r = linalg.generic {indexing_maps = [#id4i, #red4i],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%cv : tensor<4x32x1x64xf32>) outs(%fv : tensor<4x32x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x32x1xf32>
  %n = linalg.generic {indexing_maps = [#id3i, #id3i],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : tensor<4x32x64xf32>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<4x32x64xf32>
  return %r, %n : tensor<4x32x1xf32>, tensor<4x32x64xf32>
}
func.func @transposed_write(%x: tensor<8x8xf32>, %s: tensor<1x1xf32>)
    -> (tensor<8x1xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %b = linalg.generic {indexing_maps = [#idp, #bcp, #trp],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<8x8xf32>, tensor<1x1xf32>)
      outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %n = arith.subf %a, %c : f32
    linalg.yield %n : f32
  } -> tensor<8x8xf32>
  %x1 = tensor.expand_shape %b [[0], [1, 2]] output_shape [8, 8, 1]
      : tensor<8x8xf32> into tensor<8x8x1xf32>
  %er = tensor.empty() : tensor<8x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<8x1xf32>) -> tensor<8x1xf32>
  %sum = linalg.generic {indexing_maps = [#e3p, #k3p],
                         iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x1 : tensor<8x8x1xf32>) outs(%f : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<8x1xf32>
  %neg = linalg.generic {indexing_maps = [#idp, #idp],
                         iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = math.exp %a : f32
    linalg.yield %n : f32
  } -> tensor<8x8xf32>
  return %sum, %neg : tensor<8x1xf32>, tensor<8x8xf32>
}

// -----

// A bf16 tensor widened to f32 and viewed with its heads merged (attention's
// output, B x T x H x D to B x T x (H D)), read through the one view by an
// amax and by the current recipe's cast, which scales by that amax: each
// reader gets a view of its own and so a copy of the widening; both read
// the bf16 tensor, and no kernel writes the f32 one.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#sc3 = affine_map<(d0, d1, d2) -> ()>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// (Reshape propagation moves the view below the cast; the cast, returned
// collapsed, then computes the collapsed shape, reading the bf16 tensor's
// collapsed view.)
// CHECK-LABEL: func.func @widened_view
// CHECK: linalg.generic {{.+}} ins(%arg0 : tensor<2x8x4x16xbf16>) outs(%{{.+}} : tensor<f32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.extf
// CHECK-NEXT: math.absf
// CHECK: %[[VIEW:.+]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<2x8x4x16xbf16> into tensor<2x8x64xbf16>
// CHECK: linalg.generic {{.+}} ins(%[[VIEW]], %{{.+}} : tensor<2x8x64xbf16>, tensor<f32>) outs(%{{.+}} : tensor<2x8x64xf8E4M3FN>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.extf
// CHECK-NOT: linalg.generic
// CHECK: return
// OFF-LABEL: func.func @widened_view
// OFF: linalg.generic {{.+}} outs(%{{.+}} : tensor<2x8x4x16xf32>)
func.func @widened_view(%h: tensor<2x8x4x16xbf16>) -> tensor<2x8x64xf8E4M3FN> {
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
  %c = linalg.generic {indexing_maps = [#id3, #sc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%v, %amax : tensor<2x8x64xf32>, tensor<f32>) outs(%e8 : tensor<2x8x64xf8E4M3FN>) {
  ^bb0(%p: f32, %a: f32, %o: f8E4M3FN):
    %s = arith.divf %p, %a : f32
    %t = arith.truncf %s : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<2x8x64xf8E4M3FN>
  return %c : tensor<2x8x64xf8E4M3FN>
}

// -----

// FP8's current recipe: a tensor's amax (a reduction over every loop), its
// scale 448 / amax (a generic without loops: one thread's kernel), read by
// the cast and by the GEMM's descale. The scale of a whole-tensor reduction
// is computed again by each generic that reads it (a GPU thread once for
// its run: it depends on no loop), so it needs no kernel of its own. A
// scalar of anything else stays (@scalar_of_argument), as do all of
// them without recompute-cheap, one that reads its init (it would be
// written at every point of its reader), and one read by a reduction (it
// would be computed again at every term).
#v1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @scale_of_amax
// CHECK:      %[[AMAX:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]
// CHECK-NOT:  iterator_types = []
// CHECK:      linalg.generic {{.+}} iterator_types = ["parallel"]} ins(%arg0, %[[AMAX]] : tensor<64xf32>, tensor<f32>) outs(%{{.+}} : tensor<64xf8E4M3FN>)
// CHECK:        arith.divf %cst{{.*}}, %{{.+}} : f32
// CHECK:        arith.select
// CHECK:        arith.mulf
// CHECK:        arith.truncf
// CHECK:      linalg.generic {{.+}} iterator_types = []} ins(%[[AMAX]] : tensor<f32>)
// CHECK:        arith.divf
// CHECK:        arith.select
// CHECK:        arith.divf
// CHECK-NOT:  linalg.generic
// CHECK:      return
// OFF-LABEL: func.func @scale_of_amax
// OFF-COUNT-4: linalg.generic
func.func @scale_of_amax(%x: tensor<64xf32>) -> (tensor<64xf8E4M3FN>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %max = arith.constant 448.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#v1, #s1], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %scale = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%amax : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.divf %max, %a : f32
    %pos = arith.cmpf ogt, %a, %zero : f32
    %s = arith.select %pos, %q, %one : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e8 = tensor.empty() : tensor<64xf8E4M3FN>
  %codes = linalg.generic {indexing_maps = [#v1, #s1, #v1], iterator_types = ["parallel"]} ins(%x, %scale : tensor<64xf32>, tensor<f32>) outs(%e8 : tensor<64xf8E4M3FN>) {
  ^bb0(%p: f32, %s: f32, %o: f8E4M3FN):
    %m = arith.mulf %p, %s : f32
    %t = arith.truncf %m : f32 to f8E4M3FN
    linalg.yield %t : f8E4M3FN
  } -> tensor<64xf8E4M3FN>
  %descale = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%scale : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%s: f32, %o: f32):
    %r = arith.divf %one, %s : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %codes, %descale : tensor<64xf8E4M3FN>, tensor<f32>
}

// -----

#v1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @scalar_of_argument
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
func.func @scalar_of_argument(%x: tensor<64xf32>, %a: tensor<f32>) -> (tensor<64xf32>, tensor<f32>) {
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %half = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%a : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %h = arith.mulf %p, %p : f32
    linalg.yield %h : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#v1, #s1, #v1], iterator_types = ["parallel"]} ins(%x, %half : tensor<64xf32>, tensor<f32>) outs(%e : tensor<64xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %m = arith.mulf %p, %s : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%half : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%s: f32, %o: f32):
    %q = arith.addf %s, %one : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  return %y, %r : tensor<64xf32>, tensor<f32>
}

// -----

#v1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @scalar_reads_init
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
func.func @scalar_reads_init(%x: tensor<64xf32>, %b: tensor<f32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#v1, #s1], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%amax : tensor<f32>) outs(%b : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<64xf32>
  %y = linalg.generic {indexing_maps = [#v1, #s1, #v1], iterator_types = ["parallel"]} ins(%x, %sum : tensor<64xf32>, tensor<f32>) outs(%e : tensor<64xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %m = arith.mulf %p, %s : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %y : tensor<64xf32>
}

// -----

#v1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#s0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @scalar_into_reduction
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
func.func @scalar_into_reduction(%x: tensor<64xf32>, %z: tensor<f32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %max = arith.constant 448.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %amax = linalg.generic {indexing_maps = [#v1, #s1], iterator_types = ["reduction"]} ins(%x : tensor<64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %ab = math.absf %p : f32
    %mx = arith.maximumf %o, %ab : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %scale = linalg.generic {indexing_maps = [#s0, #s0], iterator_types = []} ins(%amax : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.divf %max, %a : f32
    linalg.yield %q : f32
  } -> tensor<f32>
  %total = linalg.generic {indexing_maps = [#v1, #s1, #s1], iterator_types = ["reduction"]} ins(%x, %scale : tensor<64xf32>, tensor<f32>) outs(%z : tensor<f32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %m = arith.mulf %p, %s : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %total : tensor<f32>
}

// -----

// LAMB's trust ratio: the root of the ratio of a tensor's squared norm to
// its update's (two reductions over every loop), in f64, read by the
// update's application. Its body as fusion leaves it, each root three times
// (work 70 counted op by op), costs 32 once equal ops are counted once:
// at most kScalarWork, it is computed again in the reader. (Exactly at the
// cap, and only because the greedy driver first moves the body's
// constants out of it: a cap below 32, or constants counted, fails here.) A scalar that
// costs more (a third distinct root: 37) keeps its kernel.
#t1 = affine_map<(d0) -> (d0)>
#t0 = affine_map<(d0) -> ()>
#z0 = affine_map<() -> ()>
// CHECK-LABEL: func.func @trust_ratio
// CHECK:      %[[W2:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]
// CHECK:      %[[U2:.+]] = linalg.generic {{.+}} iterator_types = ["reduction"]
// CHECK-NOT:  iterator_types = []
// CHECK:      linalg.generic {{.+}} iterator_types = ["parallel"]} ins(%arg0, %arg1, %[[W2]], %[[U2]] : tensor<1024xf32>, tensor<1024xf32>, tensor<f32>, tensor<f32>)
// CHECK:        math.sqrt %{{.+}} : f64
// CHECK-NOT:  linalg.generic
// CHECK:      return
// CHECK-LABEL: func.func @three_roots
// CHECK:      linalg.generic {{.+}} iterator_types = []
// CHECK:        math.sqrt
// CHECK:        math.sqrt
// CHECK:        math.sqrt
// CHECK:      linalg.generic {{.+}} iterator_types = ["parallel"]
func.func @trust_ratio(%w: tensor<1024xf32>, %u: tensor<1024xf32>) -> tensor<1024xf32> {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %w2 = linalg.generic {indexing_maps = [#t1, #t0], iterator_types = ["reduction"]} ins(%w : tensor<1024xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %sq = arith.mulf %p, %p : f32
    %s = arith.addf %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %u2 = linalg.generic {indexing_maps = [#t1, #t0], iterator_types = ["reduction"]} ins(%u : tensor<1024xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %sq = arith.mulf %p, %p : f32
    %s = arith.addf %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<f32>
  %ratio = linalg.generic {indexing_maps = [#z0, #z0, #z0], iterator_types = []} ins(%w2, %u2 : tensor<f32>, tensor<f32>) outs(%e1 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %zero = arith.constant 0.0 : f64
    %one = arith.constant 1.0 : f64
    %lr = arith.constant 1.0e-3 : f64
    %b0 = arith.extf %b : f32 to f64
    %rb0 = math.sqrt %b0 : f64
    %b1 = arith.extf %b : f32 to f64
    %rb1 = math.sqrt %b1 : f64
    %a0 = arith.extf %a : f32 to f64
    %ra0 = math.sqrt %a0 : f64
    %m0 = arith.mulf %ra0, %rb1 : f64
    %c0 = arith.cmpf ogt, %m0, %zero : f64
    %d0 = arith.select %c0, %rb0, %one : f64
    %a1 = arith.extf %a : f32 to f64
    %ra1 = math.sqrt %a1 : f64
    %q = arith.divf %ra1, %d0 : f64
    %b2 = arith.extf %b : f32 to f64
    %rb2 = math.sqrt %b2 : f64
    %a2 = arith.extf %a : f32 to f64
    %ra2 = math.sqrt %a2 : f64
    %m1 = arith.mulf %ra2, %rb2 : f64
    %c1 = arith.cmpf ogt, %m1, %zero : f64
    %r = arith.select %c1, %q, %one : f64
    %l = arith.mulf %r, %lr : f64
    %t = arith.truncf %l : f64 to f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<1024xf32>
  %new = linalg.generic {indexing_maps = [#t1, #t1, #t0, #t1], iterator_types = ["parallel"]} ins(%w, %u, %ratio : tensor<1024xf32>, tensor<1024xf32>, tensor<f32>) outs(%e2 : tensor<1024xf32>) {
  ^bb0(%p: f32, %d: f32, %k: f32, %o: f32):
    %step = arith.mulf %k, %d : f32
    %n = arith.subf %p, %step : f32
    linalg.yield %n : f32
  } -> tensor<1024xf32>
  return %new : tensor<1024xf32>
}

func.func @three_roots(%w: tensor<1024xf32>, %u: tensor<1024xf32>) -> tensor<1024xf32> {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %i0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %w2 = linalg.generic {indexing_maps = [#t1, #t0], iterator_types = ["reduction"]} ins(%w : tensor<1024xf32>) outs(%i0 : tensor<f32>) {
  ^bb0(%p: f32, %o: f32):
    %sq = arith.mulf %p, %p : f32
    %s = arith.addf %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<f32>
  %ratio = linalg.generic {indexing_maps = [#z0, #z0], iterator_types = []} ins(%w2 : tensor<f32>) outs(%e1 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %a0 = arith.extf %a : f32 to f64
    %r0 = math.sqrt %a0 : f64
    %r1 = math.sqrt %r0 : f64
    %r2 = math.sqrt %r1 : f64
    %s = arith.addf %r0, %r1 : f64
    %s2 = arith.addf %s, %r2 : f64
    %p = arith.mulf %s2, %s2 : f64
    %q = arith.mulf %p, %p : f64
    %q2 = arith.mulf %q, %q : f64
    %q3 = arith.mulf %q2, %q2 : f64
    %q4 = arith.mulf %q3, %q3 : f64
    %q5 = arith.mulf %q4, %q4 : f64
    %q6 = arith.mulf %q5, %q5 : f64
    %q7 = arith.mulf %q6, %q6 : f64
    %q8 = arith.mulf %q7, %q7 : f64
    %t = arith.truncf %q8 : f64 to f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<1024xf32>
  %new = linalg.generic {indexing_maps = [#t1, #t0, #t1], iterator_types = ["parallel"]} ins(%w, %ratio : tensor<1024xf32>, tensor<f32>) outs(%e2 : tensor<1024xf32>) {
  ^bb0(%p: f32, %k: f32, %o: f32):
    %n = arith.mulf %k, %p : f32
    linalg.yield %n : f32
  } -> tensor<1024xf32>
  return %new : tensor<1024xf32>
}

// -----

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
// A batch norm's mean (its channels' sums over batch and pixels, divided
// by their count), which the normalization reads through a broadcast: the
// division goes into the normalization, each point dividing again, and
// the mean's kernel goes. A layer norm's (a row's, the reduction loop
// innermost) stays for its row group.
// CHECK-LABEL: func.func @batch_norm_statistics
// CHECK: %[[S:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %[[S]] :
// CHECK: arith.divf
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
// OFF-LABEL: func.func @batch_norm_statistics
// OFF-COUNT-3: linalg.generic
func.func @batch_norm_statistics(%x: tensor<2x4x3x3xf32>, %z: tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32> {
  %sum = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x4x3x3xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e = tensor.empty() : tensor<1x4x1x1xf32>
  %mean = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum : tensor<1x4x1x1xf32>) outs(%e : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 18.0 : f32
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e2 = tensor.empty() : tensor<2x4x3x3xf32>
  %y = linalg.generic {indexing_maps = [#x, #c, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mean : tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) outs(%e2 : tensor<2x4x3x3xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x3x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// -----

#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @row_statistics
// CHECK-COUNT-3: linalg.generic
func.func @row_statistics(%x: tensor<2x4x8xf32>, %z: tensor<2x4x1xf32>) -> tensor<2x4x8xf32> {
  %sum = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x8xf32>) outs(%z : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<2x4x1xf32>
  %e = tensor.empty() : tensor<2x4x1xf32>
  %mean = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sum : tensor<2x4x1xf32>) outs(%e : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 8.0 : f32
    %s = arith.divf %a, %n : f32
    linalg.yield %s : f32
  } -> tensor<2x4x1xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mean : tensor<2x4x8xf32>, tensor<2x4x1xf32>) outs(%e2 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

#t = affine_map<(d0, d1) -> (d0, d1)>
#c = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
// A moment of a column sum (a bias gradient), read by its parameter's
// update through the identity (not a broadcast) and returned: not
// recomputed in the update; the two merge instead, one kernel writing both.
// CHECK-LABEL: func.func @moment
// CHECK: %[[S:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]}
// CHECK: %{{.+}}:2 = linalg.generic {{.*}} ins(%[[S]], %arg2, %arg3 :
// CHECK-NOT: linalg.generic
func.func @moment(%g: tensor<4x8xf32>, %z: tensor<8xf32>, %m: tensor<8xf32>, %p: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = linalg.generic {indexing_maps = [#t, #c], iterator_types = ["reduction", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %m2 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%s, %m : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %k = arith.constant 0.9 : f32
    %x = arith.mulf %b, %k : f32
    %r = arith.addf %x, %a : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %p2 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%p, %m2 : tensor<8xf32>, tensor<8xf32>) outs(%p : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %p2, %m2 : tensor<8xf32>, tensor<8xf32>
}

// -----

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
// A bottleneck's join: two batch-normalized branches added, read by the
// ReLU and by the backward pass's mask. Its own work is cheap, so it is
// copied into both readers first; then each copy takes the branches'
// statistics (a mean and an rstd a channel), and the join is never
// written. Had the statistics gone into the join first, its work (two
// divisions and a root a branch, the mean's division counted once) would
// have kept it written.
// CHECK-LABEL: func.func @join
// CHECK: %[[SX:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg0 :
// CHECK: %[[QX:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg0 :
// CHECK: %[[SY:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg1 :
// CHECK: %[[QY:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg1 :
// CHECK-NOT: linalg.generic
// CHECK: %[[RELU:.+]] = linalg.generic {{.*}} ins(%arg0, %[[SX]], %[[QX]], %arg1, %[[SY]], %[[QY]] :
// CHECK: math.rsqrt
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: %[[MASK:.+]] = linalg.generic {{.*}} ins(%arg0, %[[SX]], %[[QX]], %arg1, %[[SY]], %[[QY]], %arg3 :
// CHECK: math.rsqrt
// CHECK: arith.cmpf
// CHECK-NOT: linalg.generic
// CHECK: return %[[RELU]], %[[MASK]]
func.func @join(%x: tensor<2x4x3x3xf32>, %y: tensor<2x4x3x3xf32>, %z: tensor<1x4x1x1xf32>, %g: tensor<2x4x3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
  %sx = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x4x3x3xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %qx = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x4x3x3xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %sy = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%y : tensor<2x4x3x3xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %qy = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%y : tensor<2x4x3x3xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e = tensor.empty() : tensor<1x4x1x1xf32>
  %mx = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sx : tensor<1x4x1x1xf32>) outs(%e : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 18.0 : f32
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %rx = linalg.generic {indexing_maps = [#x, #x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sx, %qx : tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) outs(%e : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.constant 18.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %m = arith.divf %a, %n : f32
    %s = arith.divf %b, %n : f32
    %m2 = arith.mulf %m, %m : f32
    %v = arith.subf %s, %m2 : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %my = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sy : tensor<1x4x1x1xf32>) outs(%e : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 18.0 : f32
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %ry = linalg.generic {indexing_maps = [#x, #x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sy, %qy : tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) outs(%e : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.constant 18.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %m = arith.divf %a, %n : f32
    %s = arith.divf %b, %n : f32
    %m2 = arith.mulf %m, %m : f32
    %v = arith.subf %s, %m2 : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e2 = tensor.empty() : tensor<2x4x3x3xf32>
  %j = linalg.generic {indexing_maps = [#x, #c, #c, #x, #c, #c, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx, %rx, %y, %my, %ry : tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>, tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) outs(%e2 : tensor<2x4x3x3xf32>) {
  ^bb0(%a: f32, %am: f32, %ar: f32, %b: f32, %bm: f32, %br: f32, %o: f32):
    %da = arith.subf %a, %am : f32
    %na = arith.mulf %da, %ar : f32
    %db = arith.subf %b, %bm : f32
    %nb = arith.mulf %db, %br : f32
    %r = arith.addf %na, %nb : f32
    linalg.yield %r : f32
  } -> tensor<2x4x3x3xf32>
  %relu = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%j : tensor<2x4x3x3xf32>) outs(%e2 : tensor<2x4x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x4x3x3xf32>
  %mask = linalg.generic {indexing_maps = [#x, #x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%j, %g : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) outs(%e2 : tensor<2x4x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %a, %zero : f32
    %r = arith.select %pos, %b, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x4x3x3xf32>
  return %relu, %mask : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
}

// -----

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
// A mean that a reduction reads too (the backward's sum of dy times the
// centered x): its kernel stays for the reduction, so its broadcast reader
// reads it rather than computing it again besides.
// CHECK-LABEL: func.func @statistic_read_by_a_reduction
// CHECK: %[[S:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// CHECK: %[[M:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[S]] :
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[M]] :
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%arg0, %[[M]] :
func.func @statistic_read_by_a_reduction(%x: tensor<2x4x3x3xf32>, %z: tensor<1x4x1x1xf32>) -> (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) {
  %sum = linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<2x4x3x3xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e = tensor.empty() : tensor<1x4x1x1xf32>
  %mean = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sum : tensor<1x4x1x1xf32>) outs(%e : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.constant 18.0 : f32
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e2 = tensor.empty() : tensor<2x4x3x3xf32>
  %y = linalg.generic {indexing_maps = [#x, #c, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mean : tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) outs(%e2 : tensor<2x4x3x3xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %r = arith.subf %a, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x3x3xf32>
  %d = linalg.generic {indexing_maps = [#x, #c, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x, %mean : tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) outs(%z : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %c = arith.subf %a, %m : f32
    %r = arith.addf %o, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  return %y, %d : tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>
}
