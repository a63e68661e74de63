// RUN: anvil-opt %s --split-input-file --anvil-bufferize --canonicalize | FileCheck %s

// Tests that an all-reduce becomes a call of the runtime on its operand's
// buffer, in place when nothing reads the operand afterwards, on a copy
// when something does; the last argument names the mesh axis by its
// position in the module's anvil.mesh (tp is axis 1).
// CHECK: func.func private @anvil_rt_all_reduce_f32(i64, i64, i32, i32)
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[G:.+]]: memref<4x3xf32>, %[[X:.+]]: memref<4x3xf32>
// CHECK: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[G]]
// CHECK: %[[A:.+]] = arith.index_cast %[[P]] : index to i64
// CHECK: call @anvil_rt_all_reduce_f32(%[[A]], %c12_i64, %c1_i32, %c0_i32)
// CHECK: %[[COPY:.+]] = memref.alloc
// CHECK: linalg.copy ins(%[[X]] : memref<4x3xf32>) outs(%[[COPY]] : memref<4x3xf32>)
// CHECK: memref.extract_aligned_pointer_as_index %[[COPY]]
// CHECK: call @anvil_rt_all_reduce_f32({{.+}}, %c12_i64, %c0_i32, %c1_i32)
module attributes {anvil.mesh = {dp = 2 : i64, tp = 2 : i64}} {
func.func @all_reduce(%g: tensor<4x3xf32>, %x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = anvil.all_reduce mean %g axis "dp" : tensor<4x3xf32>
  %1 = anvil.all_reduce sum %x axis "tp" : tensor<4x3xf32>
  return %0, %1, %x : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}
}

// -----

// Tests that a strided buffer (a slice) goes through a contiguous
// temporary: copied in, all-reduced, copied back. Without a mesh the axis
// is -1 (a world of one).
// CHECK-LABEL: func.func @all_reduce_strided
// CHECK: %[[SLICE:.+]] = memref.subview
// CHECK: %[[TMP:.+]] = memref.alloc() : memref<4x3xf32>
// CHECK: linalg.copy ins(%[[SLICE]] : memref<4x3xf32, strided<[6, 1]>>) outs(%[[TMP]] : memref<4x3xf32>)
// CHECK: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[TMP]]
// CHECK: call @anvil_rt_all_reduce_f32({{.+}}, %c-1_i32) :
// CHECK: linalg.copy ins(%[[TMP]] : memref<4x3xf32>) outs(%[[SLICE]] : memref<4x3xf32, strided<[6, 1]>>)
func.func @all_reduce_strided(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  %s = tensor.extract_slice %x[0, 0] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
  %0 = anvil.all_reduce sum %s axis "dp" : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Tests ZeRO's collectives: a reduce-scatter, an axis slice and an
// all-gather write new buffers through the runtime (the addresses, the
// elements per rank, the reduction and the axis).
// CHECK-DAG: func.func private @anvil_rt_all_gather_f32(i64, i64, i64, i32)
// CHECK-DAG: func.func private @anvil_rt_reduce_scatter_f32(i64, i64, i64, i32, i32)
// CHECK-DAG: func.func private @anvil_rt_axis_slice_f32(i64, i64, i64, i32)
// CHECK-LABEL: func.func @zero
// CHECK-SAME: (%[[G:.+]]: memref<8xf32>, %[[P:.+]]: memref<8xf32>)
// CHECK: %[[S:.+]] = memref.alloc() : memref<4xf32>
// CHECK: call @anvil_rt_reduce_scatter_f32({{.+}}, %c4_i64, %c1_i32, %c0_i32)
// CHECK: call @anvil_rt_axis_slice_f32({{.+}}, %c4_i64, %c0_i32)
// CHECK: call @anvil_rt_all_gather_f32({{.+}}, %c4_i64, %c0_i32)
module attributes {anvil.mesh = {dp = 2 : i64}} {
func.func @zero(%g: tensor<8xf32>, %p: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %gs = anvil.reduce_scatter mean %g axis "dp" : tensor<8xf32> -> tensor<4xf32>
  %ps = anvil.axis_slice %p axis "dp" : tensor<8xf32> -> tensor<4xf32>
  %r = anvil.all_gather %ps axis "dp" : tensor<4xf32> -> tensor<8xf32>
  return %gs, %r : tensor<4xf32>, tensor<8xf32>
}
}
