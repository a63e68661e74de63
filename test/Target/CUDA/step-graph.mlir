// RUN: anvil-opt %s --split-input-file --anvil-cuda-step-graph | FileCheck %s

// Tests anvil-cuda-step-graph: an exported function whose host code only
// queues device work (launches, the CUDA runtime's queued library calls,
// views and index arithmetic, also inside loops and called functions) is
// marked capturable; host reads, writes, allocations and other calls are
// named with their location.

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%x: memref<256xf32>) kernel {
      gpu.return
    }
  }
  func.func private @anvil_rt_cuda_sgemm(i32, i32, i64, i64, i64, !llvm.ptr,
      i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, i32)
  func.func private @dispatch(%x: memref<256xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : memref<256xf32>)
    return
  }
  // CHECK-LABEL: func.func private @dispatch(
  // CHECK-NOT: anvil.graph
  // CHECK-SAME: {

  // CHECK-LABEL: func.func @step(
  // CHECK-SAME: attributes {anvil.graph_capturable}
  func.func @step(%w: memref<1024xi8>, %c: memref<16x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %x = memref.view %w[%c0][] : memref<1024xi8> to memref<256xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      func.call @dispatch(%x) : (memref<256xf32>) -> ()
    }
    %p = memref.extract_aligned_pointer_as_index %c : memref<16x16xf32> -> index
    %q = arith.index_cast %p : index to i64
    %ptr = llvm.inttoptr %q : i64 to !llvm.ptr
    %n = arith.constant 16 : i64
    %z = arith.constant 0 : i64
    %f = arith.constant 0 : i32
    func.call @anvil_rt_cuda_sgemm(%f, %f, %n, %n, %n, %ptr, %n, %z, %ptr, %n,
        %z, %ptr, %n, %z, %n, %f)
        : (i32, i32, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64,
           !llvm.ptr, i64, i64, i64, i32) -> ()
    return
  }
}

// -----

// An allocation: its address would differ at every replay.
// CHECK-LABEL: func.func @allocates(
// CHECK-SAME: anvil.graph_blocker = "memref.alloc at loc(\22alloc.mlir\22:3:4) allocates memory"
func.func @allocates(%x: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32> loc("alloc.mlir":3:4)
  memref.copy %x, %a : memref<8xf32> to memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// A host read of a buffer: a replay would not read it again.
// CHECK-LABEL: func.func @reads(
// CHECK-SAME: anvil.graph_blocker = "memref.load at loc(\22lr\22) reads memory on the host"
func.func @reads(%lr: memref<f32>, %x: memref<8xf32>) {
  %v = memref.load %lr[] : memref<f32> loc("lr")
  %c0 = arith.constant 0 : index
  memref.store %v, %x[%c0] : memref<8xf32>
  return
}

// -----

// A host write, inside a function the exported one calls.
// CHECK-LABEL: func.func private @helper(
// CHECK-NOT: anvil.graph
// CHECK-LABEL: func.func @writes(
// CHECK-SAME: anvil.graph_blocker = "memref.store at loc(\22inner\22) writes memory on the host (called from func.call at loc(\22outer\22))"
func.func private @helper(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %x[%c0] : memref<8xf32> loc("inner")
  return
}
func.func @writes(%x: memref<8xf32>) {
  func.call @helper(%x) : (memref<8xf32>) -> () loc("outer")
  return
}

// -----

// A call of the host's own (a collective over MPI) cannot be replayed.
// CHECK-LABEL: func.func @collective(
// CHECK-SAME: anvil.graph_blocker = "func.call at loc(\22grads\22) calls @anvil_rt_all_reduce_f32, which is not a queued library call"
func.func private @anvil_rt_all_reduce_f32(!llvm.ptr, i64, i32)
func.func @collective(%p: !llvm.ptr) {
  %n = arith.constant 8 : i64
  %op = arith.constant 0 : i32
  func.call @anvil_rt_all_reduce_f32(%p, %n, %op)
      : (!llvm.ptr, i64, i32) -> () loc("grads")
  return
}

// -----

// Functions that call each other: the one that writes is blocked, and so
// is the one that calls it, though its walk meets the first while that one
// is still being judged.
// CHECK-LABEL: func.func @pong(
// CHECK-SAME: anvil.graph_blocker = "memref.store at loc(\22pong\22) writes memory on the host"
// CHECK-LABEL: func.func @ping(
// CHECK-SAME: anvil.graph_blocker = "memref.store at loc(\22pong\22) writes memory on the host (called from func.call at loc(\22to-pong\22))"
func.func @pong(%x: memref<8xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %m = arith.subi %n, %c1 : index
  func.call @ping(%x, %m) : (memref<8xf32>, index) -> ()
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  memref.store %one, %x[%c0] : memref<8xf32> loc("pong")
  return
}
func.func @ping(%x: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %more = arith.cmpi sgt, %n, %c0 : index
  scf.if %more {
    func.call @pong(%x, %n) : (memref<8xf32>, index) -> () loc("to-pong")
  }
  return
}

// -----

// A global that is not constant may change between replays.
// CHECK-LABEL: func.func @mutable(
// CHECK-SAME: anvil.graph_blocker = "memref.get_global at loc(\22g\22) takes the address of @counter, a global that is not constant"
memref.global "private" @counter : memref<f32> = dense<0.0>
func.func @mutable() {
  %g = memref.get_global @counter : memref<f32> loc("g")
  return
}
