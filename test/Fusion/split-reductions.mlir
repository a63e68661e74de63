// RUN: anvil-opt %s --split-input-file --anvil-split-reductions | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-split-reductions=min-length=0 | FileCheck %s --check-prefix=OFF
// RUN: anvil-opt %s --split-input-file --anvil-split-reductions="min-length=16 min-slice=4" | FileCheck %s --check-prefix=SMALL

// Tests anvil-split-reductions: a long sum into few outputs becomes partial
// sums over slices of consecutive terms (a parallel dimension, outermost)
// and then the sum of the partials into the original output.

#rows = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// A bias gradient: 8192 rows into 768 columns, 64 slices of 128 rows.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[S:.+]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [64, 128, 768] : tensor<8192x768xf32> into tensor<64x128x768xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<64x768xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]{{.*}} ins(%[[S]] : tensor<64x128x768xf32>) outs(%[[INIT]] : tensor<64x768xf32>)
// CHECK: arith.addf
// CHECK: %[[R:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%[[P]] : tensor<64x768xf32>) outs(%arg1 : tensor<768xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
// OFF-LABEL: func.func @bias_grad
// OFF-NOT: tensor.expand_shape
// OFF: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%arg0 : tensor<8192x768xf32>)
func.func @bias_grad(%dy: tensor<8192x768xf32>, %b: tensor<768xf32>) -> tensor<768xf32> {
  %r = linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : tensor<8192x768xf32>) outs(%b : tensor<768xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %r : tensor<768xf32>
}

// -----

// A norm's weight gradient, sum(x * y) over batch and sequence: the two
// reduction dimensions are collapsed into one of 8192 terms first, and the
// fused product stays in the partial sums.
#m3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#o3 = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @norm_grad
// CHECK-DAG: %[[X:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<8x1024x768xf32> into tensor<8192x768xf32>
// CHECK-DAG: %[[Y:.+]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2]] : tensor<8x1024x768xf32> into tensor<8192x768xf32>
// CHECK-DAG: tensor.expand_shape %[[X]] {{.*}} into tensor<64x128x768xf32>
// CHECK-DAG: tensor.expand_shape %[[Y]] {{.*}} into tensor<64x128x768xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} outs(%arg2 : tensor<768xf32>)
func.func @norm_grad(%x: tensor<8x1024x768xf32>, %y: tensor<8x1024x768xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
  %r = linalg.generic {indexing_maps = [#m3, #m3, #o3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x, %y : tensor<8x1024x768xf32>, tensor<8x1024x768xf32>) outs(%o : tensor<768xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %r : tensor<768xf32>
}

// -----

// A layer norm's weight gradient, sum(dy * (x - mean) * rstd) over batch
// and sequence, reads each row's mean and rstd ([8, 1024, 1]) at
// (d0, d1, 0): the unit dimension is collapsed away first, and the
// statistics are split into slices of rows like x.
#m3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#o3 = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @norm_grad_stats
// CHECK-DAG: %[[MEAN:.+]] = tensor.collapse_shape %arg1 {{\[\[}}0], [1, 2]] : tensor<8x1024x1xf32> into tensor<8x1024xf32>
// CHECK-DAG: %[[MEAN2:.+]] = tensor.collapse_shape %[[MEAN]] {{\[\[}}0, 1]] : tensor<8x1024xf32> into tensor<8192xf32>
// CHECK-DAG: %[[MEANS:.+]] = tensor.expand_shape %[[MEAN2]] {{\[\[}}0, 1]] output_shape [64, 128] : tensor<8192xf32> into tensor<64x128xf32>
// CHECK-DAG: %[[XS:.+]] = tensor.expand_shape %{{.+}} {{.*}} into tensor<64x128x768xf32>
// CHECK: linalg.generic {indexing_maps = [#[[FULL:.+]], #[[ROWS:.+]], #[[ROWS]], #[[FULL]], #[[OUT:.+]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[XS]], %[[MEANS]], %{{.+}}, %{{.+}} : tensor<64x128x768xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128x768xf32>)
// CHECK: arith.subf
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} outs(%arg4 : tensor<768xf32>)
// OFF-LABEL: func.func @norm_grad_stats
// OFF-NOT: tensor.collapse_shape
// OFF: return
func.func @norm_grad_stats(%x: tensor<8x1024x768xf32>, %mean: tensor<8x1024x1xf32>, %rstd: tensor<8x1024x1xf32>,
                           %dy: tensor<8x1024x768xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
  %r = linalg.generic {indexing_maps = [#m3, #s3, #s3, #m3, #o3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x, %mean, %rstd, %dy : tensor<8x1024x768xf32>, tensor<8x1024x1xf32>, tensor<8x1024x1xf32>, tensor<8x1024x768xf32>)
      outs(%o : tensor<768xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %g: f32, %acc: f32):
    %c = arith.subf %a, %m : f32
    %n = arith.mulf %c, %s : f32
    %p = arith.mulf %g, %n : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<768xf32>
  return %r : tensor<768xf32>
}

// -----

// A batch norm's sum over N, H and W of NCHW (with the channel's mean read
// at (0, d1, 0, 0)): the reduction dimensions are not next to each other,
// so partial sums over H and W, one per (n, c) (N parallel in the first
// stage, the rows a warp each), from 0.0, then the sum of the 32 partials
// of each channel into the original output, whose fill moves to just
// before that sum (anvil-outline-dispatches folds it into the launch).
#x4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#m4 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#c4 = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @batch_norm
// CHECK: tensor.empty() : tensor<64xf32>
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.+]] = tensor.empty() : tensor<32x64xf32>
// CHECK-NEXT: %[[INIT:.+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<32x64xf32>)
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #[[NC:.+]]], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%arg0, %arg1 : tensor<32x64x56x56xf32>, tensor<1x64x1x1xf32>) outs(%[[INIT]] : tensor<32x64xf32>)
// CHECK: arith.subf
// CHECK: %[[OUT:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<64xf32>)
// CHECK-NEXT: %[[S:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%[[P]] : tensor<32x64xf32>) outs(%[[OUT]] : tensor<64xf32>)
// CHECK: arith.addf
// CHECK: return %[[S]]
// OFF-LABEL: func.func @batch_norm
// OFF: iterator_types = ["reduction", "parallel", "reduction", "reduction"]
func.func @batch_norm(%x: tensor<32x64x56x56xf32>, %mean: tensor<1x64x1x1xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %o = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [#x4, #m4, #c4], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x, %mean : tensor<32x64x56x56xf32>, tensor<1x64x1x1xf32>) outs(%o : tensor<64xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// An instance norm's weight gradient over N = 2 and 64^3 voxels: split over
// N first (partials per (n, c): 64 rows, a warp each, too few), then each
// of those rows into 256 slices: three stages, the voxels' partials, their
// sum per (n, c), the sum over n.
#x5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#c5 = affine_map<(d0, d1, d2, d3, d4) -> (d1)>
// CHECK-LABEL: func.func @instance_norm_grad
// CHECK: %[[S:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<256x2x32xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[S]] : tensor<256x2x32xf32>) outs(%{{.+}} : tensor<2x32xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%[[P]] : tensor<2x32xf32>) outs(%{{.+}} : tensor<32xf32>)
func.func @instance_norm_grad(%x: tensor<2x32x64x64x64xf32>, %dy: tensor<2x32x64x64x64xf32>, %o: tensor<32xf32>) -> tensor<32xf32> {
  %r = linalg.generic {indexing_maps = [#x5, #x5, #c5], iterator_types = ["reduction", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : tensor<2x32x64x64x64xf32>, tensor<2x32x64x64x64xf32>) outs(%o : tensor<32xf32>) {
  ^bb0(%a: f32, %g: f32, %acc: f32):
    %p = arith.mulf %a, %g : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// Leading reduction dimensions that are not outermost in the loops and an
// output read in another order than the loops': the partials' dimensions
// are the leading one first, then the output's in the output's order
// ((d0, d3, d1): 8 x 4 x 3), and the second stage sums the first of them
// into the output; the output's fill moves to just before it.
// CHECK-DAG: #[[$PART:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[$OUT:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
#x4p = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#o4p = affine_map<(d0, d1, d2, d3) -> (d3, d1)>
// CHECK-LABEL: func.func @permuted_output
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #[[$PART]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%arg0 : tensor<8x3x512x4xf32>) outs(%{{.+}} : tensor<8x4x3xf32>)
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4x3xf32>)
// CHECK-NEXT: linalg.generic {indexing_maps = [#{{.+}}, #[[$OUT]]], iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[P]] : tensor<8x4x3xf32>) outs(%[[F]] : tensor<4x3xf32>)
func.func @permuted_output(%x: tensor<8x3x512x4xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %o = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#x4p, #o4p], iterator_types = ["reduction", "parallel", "reduction", "parallel"]}
      ins(%x : tensor<8x3x512x4xf32>) outs(%o : tensor<4x3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// A bias gradient through a dropout mask hashed from each element's
// position (linalg.index): the slices would re-index the loops, so the
// split keeps them: partials over the sequence (512) for each of the 8
// sequences, whose loop becomes parallel, the body reading the same
// positions; then the sum of the 8 partials.
#d3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#o3 = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @dropout_bias_grad
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<8x512x1024xf32>) outs(%{{.+}} : tensor<8x1024xf32>)
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%[[P]] : tensor<8x1024xf32>) outs(%arg1 : tensor<1024xf32>)
func.func @dropout_bias_grad(%dy: tensor<8x512x1024xf32>, %o: tensor<1024xf32>) -> tensor<1024xf32> {
  %r = linalg.generic {indexing_maps = [#d3, #o3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy : tensor<8x512x1024xf32>) outs(%o : tensor<1024xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %ij = arith.addi %i, %j : index
    %ijk = arith.addi %ij, %k : index
    %h = arith.index_cast %ijk : index to i64
    %c2 = arith.constant 2 : i64
    %bit = arith.remui %h, %c2 : i64
    %keep = arith.uitofp %bit : i64 to f32
    %m = arith.mulf %x, %keep : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// -----

// An instance norm's variance: 64 rows of 8192 voxels, each reading its
// row's mean at (d0, 0). 64 rows are 64 warps for the whole GPU, so the
// row sum splits like a column sum: the mean's unit dimension dropped,
// 64 slices of 128 voxels per row.
#r2 = affine_map<(d0, d1) -> (d0, d1)>
#b2 = affine_map<(d0, d1) -> (d0, 0)>
#o2 = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @instance_norm
// CHECK: %[[M:.+]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<64x1xf32> into tensor<64xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.+}}, %[[M]] : tensor<64x64x128xf32>, tensor<64xf32>) outs(%{{.+}} : tensor<64x64xf32>)
func.func @instance_norm(%x: tensor<64x8192xf32>, %mean: tensor<64x1xf32>, %o: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.generic {indexing_maps = [#r2, #b2, #o2], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : tensor<64x8192xf32>, tensor<64x1xf32>) outs(%o : tensor<64xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %t = arith.addf %acc, %q : f32
    linalg.yield %t : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// A row sum over many rows (1024 x 32 > max-points) reading its row's
// maximum, over two consecutive reduction dimensions: left whole (a warp
// per row), not split over the outer one.
#r3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#m3 = affine_map<(d0, d1, d2) -> (d0, 0, 0)>
#o3 = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-LABEL: func.func @many_rows
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "reduction"]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @many_rows(%x: tensor<1024x16x4096xf32>, %m: tensor<1024x1x1xf32>, %o: tensor<1024xf32>) -> tensor<1024xf32> {
  %r = linalg.generic {indexing_maps = [#r3, #m3, #o3], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %m : tensor<1024x16x4096xf32>, tensor<1024x1x1xf32>) outs(%o : tensor<1024xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %t = arith.addf %acc, %e : f32
    linalg.yield %t : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// -----

// A leading unit dimension read at a constant 0 joins the group after it:
// [1, 768] at (0, d1) is read as [768] at (d1).
#rows = affine_map<(d0, d1) -> (d0, d1)>
#lead = affine_map<(d0, d1) -> (0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @leading_unit
// CHECK: %[[G:.+]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<1x768xf32> into tensor<768xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]{{.*}} ins(%{{.+}}, %[[G]] : tensor<64x128x768xf32>, tensor<768xf32>)
func.func @leading_unit(%dy: tensor<8192x768xf32>, %g: tensor<1x768xf32>, %o: tensor<768xf32>) -> tensor<768xf32> {
  %r = linalg.generic {indexing_maps = [#rows, #lead, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy, %g : tensor<8192x768xf32>, tensor<1x768xf32>) outs(%o : tensor<768xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %r : tensor<768xf32>
}

// -----

// Left alone: a short sum (128 terms < min-length; with min-length=16 and
// min-slice=4 it splits into 32 slices of 4), a maximum (not a sum), a sum
// into more than max-points outputs, a matrix product (a GEMM's), a row
// sum of more than max-points / 32 rows reading its row's statistic
// through a constant 0 (softmax's exp(x - max): a warp per row runs it
// whole; a column sum's unit dimension read so is dropped, see
// @norm_grad_stats, and so is a row sum's over few rows, see
// @instance_norm), a sum whose body
// reads its loop position (linalg.index) over one reduction dimension
// (over several, the outer ones split: see @dropout_bias_grad), and a
// column sum reading one column of a wider tensor through a constant 0 (no
// unit dimension).
#rows = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#bcast = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: tensor.expand_shape
// CHECK: return
// SMALL-LABEL: func.func @left_alone
// SMALL: tensor.expand_shape %arg0 {{.*}} into tensor<32x4x768xf32>
// SMALL-NOT: tensor.expand_shape
// SMALL: return
func.func @left_alone(%short: tensor<128x768xf32>, %wide: tensor<8192x32768xf32>, %o: tensor<768xf32>, %w: tensor<32768xf32>,
                      %ma: tensor<64x8192xf32>, %mb: tensor<8192x64xf32>, %mc: tensor<64x64xf32>,
                      %mx: tensor<1024x1xf32>, %ro: tensor<64xf32>, %wide2: tensor<8192x768xf32>, %pair: tensor<8192x2xf32>,
                      %rows: tensor<1024x4096xf32>, %rs: tensor<1024xf32>)
    -> (tensor<768xf32>, tensor<768xf32>, tensor<32768xf32>, tensor<64x64xf32>, tensor<1024xf32>, tensor<64xf32>, tensor<768xf32>) {
  %0 = linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%short : tensor<128x768xf32>) outs(%o : tensor<768xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  %1 = linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%short : tensor<128x768xf32>) outs(%o : tensor<768xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %x, %acc : f32
    linalg.yield %m : f32
  } -> tensor<768xf32>
  %2 = linalg.generic {indexing_maps = [#rows, #col], iterator_types = ["reduction", "parallel"]}
      ins(%wide : tensor<8192x32768xf32>) outs(%w : tensor<32768xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32768xf32>
  %3 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ma, %mb : tensor<64x8192xf32>, tensor<8192x64xf32>) outs(%mc : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %4 = linalg.generic {indexing_maps = [#rows, #bcast, #row], iterator_types = ["parallel", "reduction"]}
      ins(%rows, %mx : tensor<1024x4096xf32>, tensor<1024x1xf32>) outs(%rs : tensor<1024xf32>) {
  ^bb0(%x: f32, %m: f32, %acc: f32):
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    %s = arith.addf %e, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  %5 = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ma : tensor<64x8192xf32>) outs(%ro : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %p = arith.mulf %x, %jf : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %6 = linalg.generic {indexing_maps = [#rows, #bcast, #col], iterator_types = ["reduction", "parallel"]}
      ins(%wide2, %pair : tensor<8192x768xf32>, tensor<8192x2xf32>) outs(%o : tensor<768xf32>) {
  ^bb0(%x: f32, %p: f32, %acc: f32):
    %m = arith.mulf %x, %p : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<768xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<768xf32>, tensor<768xf32>, tensor<32768xf32>, tensor<64x64xf32>, tensor<1024xf32>, tensor<64xf32>, tensor<768xf32>
}
