// RUN: anvil-opt %s --split-input-file --verify-diagnostics --anvil-cuda-emulate-launches --canonicalize | FileCheck %s
// RUN: anvil-opt %s --split-input-file --verify-diagnostics --anvil-cuda-emulate-launches="reverse-order=1 check-accesses=0" --canonicalize | FileCheck %s --check-prefix=REVERSE

// Tests anvil-cuda-emulate-launches: a launch body cut into phases at its
// barriers and shuffles, each phase run for every thread of a block before
// the next; what a later phase needs is made again (pure ops) or kept per
// thread (everything else); a shuffle reads its partner's kept value.

// CHECK-LABEL: func.func @phases
// CHECK: %[[SHUF:.+]] = memref.alloca() : memref<64xf32>
// CHECK: %[[KEPT:.+]] = memref.alloca() : memref<64xf32>
// CHECK: scf.for %[[BX:.+]] = %c0 to %c3
// Phase 0: the load, kept; the shuffle's operand, kept.
// CHECK:   scf.for %[[T0:.+]] = %c0
// CHECK:     %[[X:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<192xf32>
// CHECK:     %[[Y:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-DAG: memref.store %[[X]], %[[KEPT]][%[[T0]]]
// CHECK-DAG: memref.store %[[Y]], %[[SHUF]][%[[T0]]]
// Phase 1 (after the barrier and the shuffle): the partner's value, the
// index made again, the load read back.
// CHECK:   scf.for %[[T1:.+]] = %c0
// CHECK:     %[[P:.+]] = arith.xori %[[T1]], %c4
// CHECK:     %[[O:.+]] = memref.load %[[SHUF]][%[[P]]]
// CHECK:     %[[X1:.+]] = memref.load %[[KEPT]][%[[T1]]]
// CHECK:     %[[S:.+]] = arith.addf %[[O]], %[[X1]]
// CHECK:     memref.store %[[S]], %{{.+}}[%{{.+}}] : memref<192xf32>
// With reverse-order, the blocks and each phase's threads run last first:
// the ids count down, the scratch slots and the shuffle's partner follow
// the thread's id.
// REVERSE-LABEL: func.func @phases
// REVERSE:       scf.for %[[BX:.+]] = %c0 to %c3
// REVERSE:         %[[B:.+]] = arith.subi %c2, %[[BX]]
// REVERSE:         scf.for %[[T0:.+]] = %c0 to %c64
// REVERSE:           %[[T:.+]] = arith.subi %c63, %[[T0]]
// REVERSE:           %[[BASE:.+]] = arith.muli %[[B]], %c64
// REVERSE:           arith.addi %[[BASE]], %[[T]]
// REVERSE:           memref.store %{{.+}}, %{{.+}}[%[[T]]] : memref<64xf32>
// REVERSE:         scf.for %[[T1:.+]] = %c0 to %c64
// REVERSE:           %[[U:.+]] = arith.subi %c63, %[[T1]]
// REVERSE:           arith.xori %[[U]], %c4
func.func @phases(%a: memref<192xf32>, %b: memref<192xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %c4_i32 = arith.constant 4 : i32
  %c32_i32 = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %x = memref.load %a[%i] : memref<192xf32>
    %y = arith.mulf %x, %x : f32
    gpu.barrier
    %o, %valid = gpu.shuffle xor %y, %c4_i32, %c32_i32 : f32
    %s = arith.addf %o, %x : f32
    memref.store %s, %b[%i] : memref<192xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @nested(%a: memref<32xf32>, %p: i1) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{anvil-cuda-emulate-launches: a barrier or shuffle inside control flow cannot be emulated (only at the top level of the launch body)}}
    scf.if %p {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @down(%a: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<32xf32>
    // expected-error @+1 {{anvil-cuda-emulate-launches: only a xor shuffle by a constant offset below a constant width (a power of two up to 32) in blocks of whole warps can be emulated}}
    %o, %v = gpu.shuffle down %x, %c1_i32, %c32_i32 : f32
    memref.store %o, %a[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// Shared memory (a workgroup buffer): one host buffer, made before the
// blocks' loop, 16-byte aligned as a GPU's, that every block reuses;
// thread t writes slot t, and after the barrier reads its neighbour's (a
// rotation within each block).
// CHECK-LABEL: func.func @shared
// CHECK: %[[S:.+]] = memref.alloca() {alignment = 16 : i64} : memref<32xf32>
// CHECK: scf.for %[[BX:.+]] = %c0 to %c2
// CHECK:   scf.for %[[T0:.+]] = %c0
// CHECK:     memref.store %{{.+}}, %[[S]][%[[T0]]] : memref<32xf32>
// CHECK:   scf.for %[[T1:.+]] = %c0
// CHECK:     memref.load %[[S]][%{{.+}}] : memref<32xf32>
func.func @shared(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%s : memref<32xf32, #gpu.address_space<workgroup>>) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %x = memref.load %a[%i] : memref<64xf32>
    memref.store %x, %s[%tx] : memref<32xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %n = arith.addi %tx, %c1 : index
    %m = arith.remui %n, %c32 : index
    %y = memref.load %s[%m] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %y, %b[%i] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @private_memory(%a: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{anvil-cuda-emulate-launches: only a synchronous launch of one block without private memory or dynamically sized shared memory can be emulated}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             private(%p : memref<1xf32, #gpu.address_space<private>>) {
    gpu.terminator
  }
  return
}
