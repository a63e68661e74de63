// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg=library-embedding-grads=true | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg | FileCheck %s --check-prefix=LOOP
// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg=library-embedding-grads=true --anvil-bufferize | FileCheck %s --check-prefix=CALL
// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg=library-embedding-grads=true --anvil-bufferize=embedding-grad=anvil_rt_cuda_embedding_grad_f32 | FileCheck %s --check-prefix=CUDA

// Tests anvil-convert-to-linalg's library-embedding-grads: an
// anvil.embedding_grad of f32 gradients and i32 ids is marked
// anvil.library_call and left for anvil-bufferize, which calls the
// runtime's anvil_rt_embedding_grad_f32 (positions, rows, width, then the
// gradient, the ids and a new table as pointers), or the function its
// embedding-grad option names. Without the option, or for other element
// types, the op becomes the loop over the positions.

// CHECK-LABEL: func.func @grad
// CHECK: %[[T:.+]] = anvil.embedding_grad %arg0[%arg1] rows = 10 {anvil.library_call} : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<10x8xf32>
// CHECK-NOT: scf.for
// CHECK: return %[[T]]
// LOOP-LABEL: func.func @grad
// LOOP-NOT: anvil.embedding_grad
// LOOP: scf.for
// CALL-LABEL: func.func @grad
// CALL-DAG: %[[N:.+]] = arith.constant 6 : i64
// CALL-DAG: %[[R:.+]] = arith.constant 10 : i64
// CALL-DAG: %[[W:.+]] = arith.constant 8 : i64
// CALL-DAG: %[[TABLE:.+]] = memref.alloc() {{.*}}: memref<10x8xf32>
// CALL: call @anvil_rt_embedding_grad_f32(%[[N]], %[[R]], %[[W]], %{{.+}}, %{{.+}}, %{{.+}}) : (i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CALL: return %[[TABLE]]
// CUDA: call @anvil_rt_cuda_embedding_grad_f32(
// CUDA-NOT: call @anvil_rt_embedding_grad_f32(
func.func @grad(%g: tensor<2x3x8xf32>, %ids: tensor<2x3xi32>) -> tensor<10x8xf32> {
  %t = anvil.embedding_grad %g[%ids] rows = 10 : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> tensor<10x8xf32>
  return %t : tensor<10x8xf32>
}

// -----

// bf16 gradients and i64 ids: the loop (the runtime takes f32 and i32).
// CHECK-LABEL: func.func @others
// CHECK-NOT: anvil.embedding_grad
// CHECK: scf.for
// CHECK: scf.for
func.func @others(%g: tensor<6x8xbf16>, %ids: tensor<6xi32>, %h: tensor<6x8xf32>, %wide: tensor<6xi64>) -> (tensor<10x8xbf16>, tensor<10x8xf32>) {
  %a = anvil.embedding_grad %g[%ids] rows = 10 : (tensor<6x8xbf16>, tensor<6xi32>) -> tensor<10x8xbf16>
  %b = anvil.embedding_grad %h[%wide] rows = 10 : (tensor<6x8xf32>, tensor<6xi64>) -> tensor<10x8xf32>
  return %a, %b : tensor<10x8xbf16>, tensor<10x8xf32>
}
