// RUN: anvil-opt %s --split-input-file --anvil-fuse | FileCheck %s

// Tests anvil-fuse's last step: a generic whose results are returned
// collapsed (the optimizer's moments of a q/k/v bias, whose gradient comes
// as (heads, head dim)) computes the collapsed shape itself, into empties
// of that shape, so bufferization writes the returned buffers instead of
// ones the return copies. A generic one of whose results is returned
// uncollapsed stays: collapsed, that result would be returned as a view
// and copied instead.

#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @moments
// CHECK:      %[[G:.+]] = tensor.collapse_shape %arg1 {{\[}}[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
// CHECK:      %[[E0:.+]] = tensor.empty() : tensor<64xf32>
// CHECK:      %[[E1:.+]] = tensor.empty() : tensor<64xf32>
// CHECK:      %[[R:.+]]:2 = linalg.generic {{.+}} iterator_types = ["parallel"]} ins(%arg0, %[[G]], %arg2 : tensor<64xf32>, tensor<64xf32>, tensor<f32>) outs(%[[E0]], %[[E1]] : tensor<64xf32>, tensor<64xf32>)
// CHECK:      return %[[R]]#0, %[[R]]#1 : tensor<64xf32>, tensor<64xf32>
func.func @moments(%m: tensor<64xf32>, %g: tensor<4x16xf32>, %s: tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %me = tensor.expand_shape %m [[0, 1]] output_shape [4, 16] : tensor<64xf32> into tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #sc, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%me, %g, %s : tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>) outs(%e, %e : tensor<4x16xf32>, tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32, %o2: f32):
    %x = arith.mulf %a, %c : f32
    %y = arith.addf %x, %b : f32
    linalg.yield %y, %x : f32, f32
  } -> (tensor<4x16xf32>, tensor<4x16xf32>)
  %c0 = tensor.collapse_shape %r#0 [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  %c1 = tensor.collapse_shape %r#1 [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  return %c0, %c1 : tensor<64xf32>, tensor<64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @one_returned_plain
// CHECK:      %[[R:.+]]:2 = linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]}
// CHECK:      %[[C:.+]] = tensor.collapse_shape %[[R]]#0
// CHECK:      return %[[C]], %[[R]]#1 : tensor<64xf32>, tensor<4x16xf32>
func.func @one_returned_plain(%m: tensor<64xf32>, %g: tensor<4x16xf32>, %s: tensor<f32>) -> (tensor<64xf32>, tensor<4x16xf32>) {
  %me = tensor.expand_shape %m [[0, 1]] output_shape [4, 16] : tensor<64xf32> into tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #sc, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%me, %g, %s : tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>) outs(%e, %e : tensor<4x16xf32>, tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32, %o2: f32):
    %x = arith.mulf %a, %c : f32
    %y = arith.addf %x, %b : f32
    linalg.yield %y, %x : f32, f32
  } -> (tensor<4x16xf32>, tensor<4x16xf32>)
  %c = tensor.collapse_shape %r#0 [[0, 1]] : tensor<4x16xf32> into tensor<64xf32>
  return %c, %r#1 : tensor<64xf32>, tensor<4x16xf32>
}
