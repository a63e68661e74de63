// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg=online-logsumexp=true | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg | FileCheck %s --check-prefix=TWO

// Tests that with online-logsumexp a row's log-sum-exp (emitRowLogSumExp's
// ops: the row maximum, the shifted exponentials' sum, m + log(s)) becomes
// one generic over (..., 1, C) reading z once: the maximum from -FLT_MAX,
// the sum from 0, one exp a term, the sum rescaled where the maximum
// grows; lse = m + log(s) after it. Without the option, two reductions.
// CHECK-LABEL: func.func @lse
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[LOW:.+]] = arith.constant -3.40282347E+38 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[Z:.+]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3]] output_shape [2, 3, 1, 5] : tensor<2x3x5xf32> into tensor<2x3x1x5xf32>
// CHECK: %[[M0:.+]] = linalg.fill ins(%[[LOW]] : f32) outs(%{{.+}} : tensor<2x3x1xf32>)
// CHECK: %[[S0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<2x3x1xf32>)
// CHECK: %[[F:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[Z]] : tensor<2x3x1x5xf32>) outs(%[[M0]], %[[S0]] : tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT: ^bb0(%[[V:.+]]: f32, %[[M:.+]]: f32, %[[S:.+]]: f32):
// CHECK-NEXT: %[[NEXT:.+]] = arith.maximumf %[[M]], %[[V]]
// CHECK-NEXT: %[[LO:.+]] = arith.minimumf %[[M]], %[[V]]
// CHECK-NEXT: %[[D:.+]] = arith.subf %[[LO]], %[[NEXT]]
// CHECK-NEXT: %[[E:.+]] = math.exp %[[D]]
// CHECK-NEXT: %[[GREW:.+]] = arith.cmpf ogt, %[[V]], %[[M]]
// CHECK-NEXT: %[[SE:.+]] = arith.mulf %[[S]], %[[E]]
// CHECK-NEXT: %[[R:.+]] = arith.addf %[[SE]], %[[ONE]]
// CHECK-NEXT: %[[A:.+]] = arith.addf %[[S]], %[[E]]
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[GREW]], %[[R]], %[[A]]
// CHECK-NEXT: linalg.yield %[[NEXT]], %[[SEL]]
// CHECK: math.log
// CHECK: arith.addf
// CHECK-NOT: math.exp
// CHECK: return
// TWO-LABEL: func.func @lse
// TWO-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
// TWO-NOT: arith.select
func.func @lse(%z: tensor<2x3x5xf32>) -> tensor<2x3x1xf32> {
  %m = anvil.reduce_max %z dims [2] keep_dims : tensor<2x3x5xf32> -> tensor<2x3x1xf32>
  %mb = anvil.broadcast %m, dims = [0, 1, 2] : tensor<2x3x1xf32> -> tensor<2x3x5xf32>
  %d = anvil.sub %z, %mb : tensor<2x3x5xf32>
  %e = anvil.exp %d : tensor<2x3x5xf32>
  %s = anvil.reduce_sum %e dims [2] keep_dims : tensor<2x3x5xf32> -> tensor<2x3x1xf32>
  %l = anvil.log %s : tensor<2x3x1xf32>
  %lse = anvil.add %m, %l : tensor<2x3x1xf32>
  return %lse : tensor<2x3x1xf32>
}

// -----

// Tests that what is not of that form keeps its two passes: the maximum
// read elsewhere (it is -FLT_MAX for a row of -inf in the one pass); the
// exponentials read elsewhere (a softmax's); a sum over another
// dimension; f64 rows; and the sum's logarithm read elsewhere.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: arith.select
// CHECK: return
func.func @kept(%z: tensor<3x5xf32>, %y: tensor<3x5xf64>)
    -> (tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x5xf32>, tensor<3x1xf64>, tensor<3x1xf32>, tensor<3x1xf32>) {
  %m0 = anvil.reduce_max %z dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %b0 = anvil.broadcast %m0, dims = [0, 1] : tensor<3x1xf32> -> tensor<3x5xf32>
  %d0 = anvil.sub %z, %b0 : tensor<3x5xf32>
  %e0 = anvil.exp %d0 : tensor<3x5xf32>
  %s0 = anvil.reduce_sum %e0 dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %l0 = anvil.log %s0 : tensor<3x1xf32>
  %lse0 = anvil.add %m0, %l0 : tensor<3x1xf32>

  %m1 = anvil.reduce_max %z dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %b1 = anvil.broadcast %m1, dims = [0, 1] : tensor<3x1xf32> -> tensor<3x5xf32>
  %d1 = anvil.sub %z, %b1 : tensor<3x5xf32>
  %e1 = anvil.exp %d1 : tensor<3x5xf32>
  %s1 = anvil.reduce_sum %e1 dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %l1 = anvil.log %s1 : tensor<3x1xf32>
  %lse1 = anvil.add %m1, %l1 : tensor<3x1xf32>

  %m2 = anvil.reduce_max %y dims [1] keep_dims : tensor<3x5xf64> -> tensor<3x1xf64>
  %b2 = anvil.broadcast %m2, dims = [0, 1] : tensor<3x1xf64> -> tensor<3x5xf64>
  %d2 = anvil.sub %y, %b2 : tensor<3x5xf64>
  %e2 = anvil.exp %d2 : tensor<3x5xf64>
  %s2 = anvil.reduce_sum %e2 dims [1] keep_dims : tensor<3x5xf64> -> tensor<3x1xf64>
  %l2 = anvil.log %s2 : tensor<3x1xf64>
  %lse2 = anvil.add %m2, %l2 : tensor<3x1xf64>

  %m3 = anvil.reduce_max %z dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %b3 = anvil.broadcast %m3, dims = [0, 1] : tensor<3x1xf32> -> tensor<3x5xf32>
  %d3 = anvil.sub %z, %b3 : tensor<3x5xf32>
  %e3 = anvil.exp %d3 : tensor<3x5xf32>
  %s3 = anvil.reduce_sum %e3 dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %l3 = anvil.log %s3 : tensor<3x1xf32>
  %lse3 = anvil.add %m3, %l3 : tensor<3x1xf32>
  return %lse0, %m0, %lse1, %e1, %lse2, %lse3, %l3
      : tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x1xf32>, tensor<3x5xf32>, tensor<3x1xf64>, tensor<3x1xf32>, tensor<3x1xf32>
}

// -----

// A sum over the rows' other dimension is not the rows' log-sum-exp.
// CHECK-LABEL: func.func @columns
// CHECK-NOT: arith.select
// CHECK: return
func.func @columns(%z: tensor<3x5xf32>) -> tensor<3x1xf32> {
  %m = anvil.reduce_max %z dims [1] keep_dims : tensor<3x5xf32> -> tensor<3x1xf32>
  %mb = anvil.broadcast %m, dims = [0, 1] : tensor<3x1xf32> -> tensor<3x5xf32>
  %d = anvil.sub %z, %mb : tensor<3x5xf32>
  %e = anvil.exp %d : tensor<3x5xf32>
  %s = anvil.reduce_sum %e dims [0] keep_dims : tensor<3x5xf32> -> tensor<1x5xf32>
  %s1 = anvil.reshape %s : tensor<1x5xf32> -> tensor<5x1xf32>
  %s3 = anvil.slice %s1 [0:3:1, 0:1:1] : tensor<5x1xf32> -> tensor<3x1xf32>
  %l = anvil.log %s3 : tensor<3x1xf32>
  %lse = anvil.add %m, %l : tensor<3x1xf32>
  return %lse : tensor<3x1xf32>
}
