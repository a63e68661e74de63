// RUN: anvil-opt %s --split-input-file --canonicalize | FileCheck %s

// Tests that x + 0, 0 + x, x - 0, x * 1, 1 * x and x / 1 fold to x.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[I:.+]]: tensor<4xi32>)
// CHECK-NOT: anvil.add
// CHECK-NOT: anvil.sub
// CHECK-NOT: anvil.mul
// CHECK-NOT: anvil.div
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]], %[[I]]
func.func @identities(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>) {
  %zero = anvil.constant dense<0.0> : tensor<4xf32>
  %one = anvil.constant dense<1.0> : tensor<4xf32>
  %izero = anvil.constant dense<0> : tensor<4xi32>
  %ione = anvil.constant dense<1> : tensor<4xi32>
  %0 = anvil.add %x, %zero : tensor<4xf32>
  %1 = anvil.add %zero, %x : tensor<4xf32>
  %2 = anvil.sub %x, %zero : tensor<4xf32>
  %3 = anvil.mul %x, %one : tensor<4xf32>
  %4 = anvil.mul %one, %x : tensor<4xf32>
  %5 = anvil.div %x, %one : tensor<4xf32>
  %6 = anvil.add %i, %izero : tensor<4xi32>
  %7 = anvil.mul %ione, %i : tensor<4xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// Tests that identities do not fold with non-identity or non-splat constants.
// CHECK-LABEL: func.func @not_identities
// CHECK: anvil.sub
// CHECK: anvil.mul
// CHECK: anvil.div
// CHECK: anvil.add
func.func @not_identities(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %zero = anvil.constant dense<0.0> : tensor<2xf32>
  %two = anvil.constant dense<2.0> : tensor<2xf32>
  %mixed = anvil.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = anvil.sub %zero, %x : tensor<2xf32>
  %1 = anvil.mul %x, %two : tensor<2xf32>
  %2 = anvil.div %x, %two : tensor<2xf32>
  %3 = anvil.add %x, %mixed : tensor<2xf32>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Tests that neg(neg(x)) folds to x.
// CHECK-LABEL: func.func @double_negation
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @double_negation(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = anvil.neg %x : tensor<4xf32>
  %1 = anvil.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Tests that a cast to the operand's own type folds away and others stay.
// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK: %[[H:.+]] = anvil.cast %[[X]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: return %[[X]], %[[H]]
func.func @cast_same_type(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %0 = anvil.cast %x : tensor<4xf32> to tensor<4xf32>
  %1 = anvil.cast %x : tensor<4xf32> to tensor<4xbf16>
  return %0, %1 : tensor<4xf32>, tensor<4xbf16>
}

// -----

// Tests that a float widened exactly and cast back is itself, also across
// a reshape (a bf16 attention result widened, reshaped and rounded again
// for a bf16 GEMM), while a narrowing and widening pair (which rounds) and
// a widening to a type that does not hold the operand exactly stay.
// CHECK-LABEL: func.func @exact_round_trips
// CHECK-SAME: (%[[B:.+]]: tensor<2x4xbf16>, %[[X:.+]]: tensor<2x4xf32>, %[[H:.+]]: tensor<2x4xf16>)
// CHECK-DAG: %[[R:.+]] = anvil.reshape %[[B]] : tensor<2x4xbf16> -> tensor<8xbf16>
// CHECK-DAG: %[[N:.+]] = anvil.cast %[[X]] : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK-DAG: %[[W:.+]] = anvil.cast %[[N]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK-DAG: %[[L:.+]] = anvil.cast %[[H]] : tensor<2x4xf16> to tensor<2x4xbf16>
// CHECK-DAG: %[[M:.+]] = anvil.cast %[[L]] : tensor<2x4xbf16> to tensor<2x4xf16>
// CHECK: return %[[B]], %[[R]], %[[W]], %[[M]]
func.func @exact_round_trips(%b: tensor<2x4xbf16>, %x: tensor<2x4xf32>, %h: tensor<2x4xf16>) -> (tensor<2x4xbf16>, tensor<8xbf16>, tensor<2x4xf32>, tensor<2x4xf16>) {
  %0 = anvil.cast %b : tensor<2x4xbf16> to tensor<2x4xf32>
  %1 = anvil.cast %0 : tensor<2x4xf32> to tensor<2x4xbf16>
  %2 = anvil.reshape %0 : tensor<2x4xf32> -> tensor<8xf32>
  %3 = anvil.cast %2 : tensor<8xf32> to tensor<8xbf16>
  %4 = anvil.cast %x : tensor<2x4xf32> to tensor<2x4xbf16>
  %5 = anvil.cast %4 : tensor<2x4xbf16> to tensor<2x4xf32>
  %6 = anvil.cast %h : tensor<2x4xf16> to tensor<2x4xbf16>
  %7 = anvil.cast %6 : tensor<2x4xbf16> to tensor<2x4xf16>
  return %1, %3, %5, %7 : tensor<2x4xbf16>, tensor<8xbf16>, tensor<2x4xf32>, tensor<2x4xf16>
}

// -----

// Tests that reshape(reshape(x)) becomes one reshape and a reshape to the
// same shape disappears.
// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.+]] = anvil.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %[[R]], %[[X]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> (tensor<24xf32>, tensor<2x3x4xf32>) {
  %0 = anvil.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = anvil.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  %2 = anvil.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %1, %2 : tensor<24xf32>, tensor<2x3x4xf32>
}

// -----

// Tests that reshaping a constant folds into a constant of the new shape.
// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.+]] = anvil.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x2xi32> {
  %c = anvil.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %0 = anvil.reshape %c : tensor<4xi32> -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

// -----

// Tests that transpose(transpose(x)) composes, and cancels when the
// composition is the identity.
// CHECK-LABEL: func.func @transpose_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.+]] = anvil.transpose %[[X]], [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]], %[[X]]
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %0 = anvil.transpose %x, [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = anvil.transpose %0, [1, 0, 2] : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %2 = anvil.transpose %0, [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %3 = anvil.transpose %x, [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %1, %2, %3 : tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// Tests that a broadcast to the operand's own shape folds away, and a
// broadcast of a splat constant becomes a constant.
// CHECK-LABEL: func.func @broadcast_same_shape
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[C:.+]] = anvil.constant dense<2.000000e+00> : tensor<3x4xf32>
// CHECK-NEXT: return %[[X]], %[[C]]
func.func @broadcast_same_shape(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<3x4xf32>) {
  %0 = anvil.broadcast %x, dims = [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = anvil.constant dense<2.0> : tensor<4xf32>
  %1 = anvil.broadcast %c, dims = [1] : tensor<4xf32> -> tensor<3x4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<3x4xf32>
}
