// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg --mlir-print-local-scope | FileCheck %s

// Tests that an elementwise op becomes one generic over identity maps.
// CHECK-LABEL: func.func @add
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf
func.func @add(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = anvil.add %a, %b : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that a broadcast pins a stretched size-1 dimension to 0 and drops
// the new ones.
// CHECK-LABEL: func.func @broadcast
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
func.func @broadcast(%x: tensor<1x8xf32>) -> tensor<2x4x8xf32> {
  %y = anvil.broadcast %x, dims = [1, 2] : tensor<1x8xf32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Tests that a plain matmul is linalg.matmul over a zero-filled init, and a
// transposed one carries the transpose in its indexing maps.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[Z:.+]] = linalg.fill
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x3xf32>, tensor<3x5xf32>) outs(%[[Z]] : tensor<4x5xf32>)
// CHECK: linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%{{.+}}, %{{.+}} : tensor<3x4xf32>, tensor<5x3xf32>)
func.func @matmul(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %at: tensor<3x4xf32>, %bt: tensor<5x3xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %y = anvil.matmul %a, %b : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %z = anvil.matmul %at, %bt {transpose_lhs, transpose_rhs} : (tensor<3x4xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %y, %z : tensor<4x5xf32>, tensor<4x5xf32>
}

// -----

// Tests that x @ W with a shared W is one 2-D matmul over the collapsed
// rows, and that a batched matmul with two batch dimensions is one
// batch_matmul over the collapsed batch.
// CHECK-LABEL: func.func @batched
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2]] : tensor<2x4x3xf32> into tensor<8x3xf32>
// CHECK: linalg.matmul ins({{.+}} : tensor<8x3xf32>, tensor<3x5xf32>)
// CHECK: tensor.expand_shape {{.+}} : tensor<8x5xf32> into tensor<2x4x5xf32>
// CHECK: linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] ins({{.+}} : tensor<6x4x3xf32>, tensor<6x5x3xf32>)
func.func @batched(%x: tensor<2x4x3xf32>, %w: tensor<3x5xf32>, %q: tensor<2x3x4x3xf32>, %k: tensor<2x3x5x3xf32>) -> (tensor<2x4x5xf32>, tensor<2x3x4x5xf32>) {
  %y = anvil.matmul %x, %w : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
  %s = anvil.matmul %q, %k {transpose_rhs} : (tensor<2x3x4x3xf32>, tensor<2x3x5x3xf32>) -> tensor<2x3x4x5xf32>
  return %y, %s : tensor<2x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// Tests that a bf16 matmul accumulates in f32 (its linalg op widens the
// bf16 operands into an f32 init) and rounds its product to bf16 once; a
// bf16 matmul plus a bf16 tensor is not folded into the accumulator (the
// product is rounded before the add).
// CHECK-LABEL: func.func @bf16_matmul
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x5xf32>)
// CHECK: %[[P:.+]] = linalg.matmul ins({{.+}} : tensor<8x3xbf16>, tensor<3x5xbf16>) outs(%[[Z]] : tensor<8x5xf32>)
// CHECK: %[[E:.+]] = tensor.expand_shape %[[P]]
// CHECK: linalg.generic {{.+}} ins(%[[E]] : tensor<2x4x5xf32>) outs(%{{.+}} : tensor<2x4x5xbf16>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: linalg.generic
// CHECK: arith.addf %{{.+}}, %{{.+}} : bf16
func.func @bf16_matmul(%x: tensor<2x4x3xbf16>, %w: tensor<3x5xbf16>, %c: tensor<2x4x5xbf16>) -> tensor<2x4x5xbf16> {
  %y = anvil.matmul %x, %w : (tensor<2x4x3xbf16>, tensor<3x5xbf16>) -> tensor<2x4x5xbf16>
  %z = anvil.add %y, %c : tensor<2x4x5xbf16>
  return %z : tensor<2x4x5xbf16>
}

// -----

// Tests that a mean is a sum reduction followed by a division, re-expanded
// for keep_dims.
// CHECK-LABEL: func.func @mean
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4xf32>)
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: tensor.expand_shape {{.+}} : tensor<4xf32> into tensor<4x1xf32>
func.func @mean(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %y = anvil.reduce_mean %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

// Tests that an embedding extracts clamped rows, and its gradient
// scatter-adds rows in a loop over the index positions.
// CHECK-LABEL: func.func @embedding
// CHECK: linalg.generic
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<10x4xf32>
// CHECK: scf.for
// CHECK: tensor.extract_slice
// CHECK: tensor.insert_slice
func.func @embedding(%t: tensor<10x4xf32>, %i: tensor<2x3xi32>, %g: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<10x4xf32>) {
  %e = anvil.embedding %t[%i] : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %d = anvil.embedding_grad %g[%i] rows = 10 : (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<10x4xf32>
  return %e, %d : tensor<2x3x4xf32>, tensor<10x4xf32>
}

// -----

// Tests that an add of a single-use matmul (a bias) becomes the matmul's
// accumulator: the broadcast bias is the init, and no add is left.
// CHECK-LABEL: func.func @bias_epilogue
// CHECK: %[[B:.+]] = linalg.generic
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x3xf32>, tensor<3x5xf32>) outs(%[[B]] : tensor<4x5xf32>)
// CHECK-NOT: arith.addf
func.func @bias_epilogue(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %y = anvil.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %bb = anvil.broadcast %b, dims = [1] : tensor<5xf32> -> tensor<4x5xf32>
  %z = anvil.add %bb, %y : tensor<4x5xf32>
  return %z : tensor<4x5xf32>
}

// -----

// Tests that convolutions and pooling use the named linalg ops where they
// exist: 2-D without groups, 2-D grouped (filter as (F, G, C, kh, kw)),
// NCHW max pooling; a 3-D average pooling has none and is a generic.
// CHECK-LABEL: func.func @named_conv_and_pool
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: linalg.transpose
// CHECK: linalg.conv_2d_ngchw_fgchw
// CHECK: linalg.pooling_nchw_max
// CHECK-NOT: linalg.pooling
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
func.func @named_conv_and_pool(%x: tensor<1x4x8x8xf32>, %w: tensor<2x4x3x3xf32>, %wg: tensor<6x2x3x3xf32>, %v: tensor<1x2x4x4x4xf32>)
    -> (tensor<1x2x3x3xf32>, tensor<1x6x6x6xf32>, tensor<1x4x4x4xf32>, tensor<1x2x2x2x2xf32>) {
  %0 = anvil.conv %x, %w stride [2, 2] pad_low [0, 0] pad_high [0, 0] dilation [1, 1] : (tensor<1x4x8x8xf32>, tensor<2x4x3x3xf32>) -> tensor<1x2x3x3xf32>
  %1 = anvil.conv %x, %wg stride [1, 1] pad_low [0, 0] pad_high [0, 0] dilation [1, 1] {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  %2 = anvil.max_pool %x window [2, 2] stride [2, 2] pad_low [0, 0] pad_high [0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %3 = anvil.avg_pool %v window [2, 2, 2] stride [2, 2, 2] pad_low [0, 0, 0] pad_high [0, 0, 0] {count_include_pad} : tensor<1x2x4x4x4xf32> -> tensor<1x2x2x2x2xf32>
  return %0, %1, %2, %3 : tensor<1x2x3x3xf32>, tensor<1x6x6x6xf32>, tensor<1x4x4x4xf32>, tensor<1x2x2x2x2xf32>
}

// -----

// Tests that a small concatenation (an FP8 amax history shifted by one,
// its newest amax first) is one generic that reads each point from the
// input it comes from, its index along the dimension less the input's
// offset, clamped into every input; a large one inserts each input.
// CHECK-LABEL: func.func @concat
// CHECK: %[[E:.+]] = tensor.empty() : tensor<16xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} outs(%[[E]] : tensor<16xf32>)
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: arith.maxsi %[[I]], %c0
// CHECK: arith.minsi {{.*}}, %c0
// CHECK: %[[A:.+]] = tensor.extract %arg0[
// CHECK: arith.subi %[[I]], %c1
// CHECK: arith.maxsi
// CHECK: arith.minsi {{.*}}, %c14
// CHECK: %[[B:.+]] = tensor.extract %{{.+}}[
// CHECK: %[[FIRST:.+]] = arith.cmpi slt, %[[I]], %c1
// CHECK: %[[V:.+]] = arith.select %[[FIRST]], %[[A]], %[[B]]
// CHECK: linalg.yield %[[V]]
// CHECK-NOT: tensor.insert_slice
// CHECK: tensor.insert_slice %arg2 into %{{.+}}[0, 0] [256, 300]
// CHECK: tensor.insert_slice %arg2 into %{{.+}}[0, 300] [256, 300]
func.func @concat(%newest: tensor<1xf32>, %history: tensor<16xf32>, %big: tensor<256x300xf32>) -> (tensor<16xf32>, tensor<256x600xf32>) {
  %kept = anvil.slice %history [0:15:1] : tensor<16xf32> -> tensor<15xf32>
  %h = anvil.concat %newest, %kept dim = 0 : (tensor<1xf32>, tensor<15xf32>) -> tensor<16xf32>
  %b = anvil.concat %big, %big dim = 1 : (tensor<256x300xf32>, tensor<256x300xf32>) -> tensor<256x600xf32>
  return %h, %b : tensor<16xf32>, tensor<256x600xf32>
}
