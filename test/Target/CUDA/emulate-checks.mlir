// RUN: anvil-opt %s --anvil-cuda-emulate-launches | FileCheck %s
// RUN: anvil-opt %s --anvil-cuda-emulate-launches=check-accesses=0 | FileCheck %s --check-prefix=OFF
// RUN: anvil-opt %s --anvil-cuda-emulate-launches --canonicalize | mlir-opt --pass-pipeline='builtin.module(convert-scf-to-cf,expand-strided-metadata,lower-affine,convert-vector-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)' -o %t.mlir
// RUN: mlir-runner %t.mlir -e aligned -entry-point-result=void 2>&1 | count 0
// RUN: not --crash mlir-runner %t.mlir -e misaligned -entry-point-result=void 2>&1 | FileCheck %s --check-prefix=MISALIGNED
// RUN: not --crash mlir-runner %t.mlir -e past_end -entry-point-result=void 2>&1 | FileCheck %s --check-prefix=PAST-END
// RUN: not --crash mlir-runner %t.mlir -e before_start -entry-point-result=void 2>&1 | FileCheck %s --check-prefix=BEFORE-START
// RUN: not anvil-opt %S/Inputs/write-clash.mlir --anvil-cuda-emulate-launches 2>&1 | FileCheck %s --check-prefix=CLASH
// RUN: anvil-opt %S/Inputs/write-clash.mlir --anvil-cuda-emulate-launches=check-accesses=0 -o /dev/null

// Tests anvil-cuda-emulate-launches' access checks: each load and store of
// a launch body first checks its indices against the buffer's shape (a
// vector's whole run) and a claimed alignment against its address, and a
// failure writes which access failed to stderr and aborts, as a GPU would
// fault (or read another buffer's bytes) where the host would go on.

// The run of 4 at %i: in bounds when %i + 3 < 66, aligned when the address
// is a multiple of 16 bytes; so for the vector store. The scalar store at
// %j claims nothing beyond its 4 bytes: its bounds alone.
// The messages, one constant each, in the order of the checks.
// CHECK:       llvm.mlir.global internal constant @[[$BOUNDS:__anvil_grid_check_[0-9]+]]("error: out of bounds in @kernel (anvil emulated grid): a vector load of argument 0 (memref<66xf32>)\0A")
// CHECK-NEXT:  llvm.mlir.global internal constant @[[$ALIGN:__anvil_grid_check_[0-9]+]]("error: misaligned address in @kernel (anvil emulated grid): a vector load of argument 0 (memref<66xf32>), which claims 16-byte alignment (a GPU faults)\0A")
// CHECK-LABEL: func.func @kernel
// CHECK:     %[[I:.+]] = arith.addi %{{.+}}, %arg2 : index
// CHECK:     %[[LAST:.+]] = arith.addi %[[I]], %c3
// CHECK:     %[[DIM:.+]] = memref.dim %arg0, %c0
// CHECK:     arith.cmpi ult, %[[LAST]], %[[DIM]]
// CHECK:     arith.cmpi ule, %[[I]], %[[LAST]]
// CHECK:     scf.if
// CHECK:       llvm.mlir.addressof @[[$BOUNDS]]
// CHECK:       func.call @write(
// CHECK:       func.call @abort()
// CHECK:     extract_strided_metadata %arg0
// CHECK:     %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK:     arith.remui %{{.+}}, %c16
// CHECK:     scf.if
// CHECK:       llvm.mlir.addressof @[[$ALIGN]]
// CHECK:     vector.load %arg0[%[[I]]]
// CHECK:     arith.cmpi ult
// CHECK:     scf.if
// CHECK:     extract_aligned_pointer_as_index %arg1
// CHECK:     arith.remui
// CHECK:     scf.if
// CHECK:     vector.store
// CHECK:     arith.cmpi ult
// CHECK:     scf.if
// CHECK-NOT: remui
// CHECK:     memref.store

// An index buffer (a gather's positions) and a buffer of vectors: their
// bounds, in elements; no alignment check (an index's size is the
// target's; a vector element is one element, not a run).
// CHECK-LABEL: func.func @gather
// CHECK:     %[[P:.+]] = memref.dim %arg0, %c0
// CHECK:     arith.cmpi ult, %{{.+}}, %[[P]]
// CHECK:     scf.if
// CHECK-NOT: remui
// CHECK:     %[[I:.+]] = memref.load %arg0
// CHECK:     %[[N:.+]] = memref.dim %arg1, %c0
// CHECK:     arith.cmpi ult, %[[I]], %[[N]]
// CHECK-NOT: arith.addi %[[I]]
// CHECK:     scf.if
// CHECK-NOT: remui
// CHECK:     vector.load %arg1[%[[I]]]
// The two libc functions the reports call, declared once.
// CHECK:     func.func private @write(i32, !llvm.ptr, i64) -> i64
// CHECK:     func.func private @abort()

// CLASH: error: anvil-cuda-emulate-launches: the access checks call libc's 'write' as '(i32, !llvm.ptr, i64) -> i64'; this symbol takes its name (check-accesses=0 runs without them)

// OFF-LABEL: func.func @kernel
// OFF-NOT:   scf.if
// OFF-NOT:   @write
// OFF:       vector.load
// OFF-NOT:   @__anvil_grid_check

// MISALIGNED: error: misaligned address in @kernel (anvil emulated grid): a vector load of argument 0 (memref<66xf32>), which claims 16-byte alignment (a GPU faults)
// PAST-END: error: out of bounds in @kernel (anvil emulated grid): a vector load of argument 0 (memref<66xf32>)
// BEFORE-START: error: out of bounds in @kernel (anvil emulated grid): a store of argument 1 (memref<68xf32>)
func.func @kernel(%a: memref<66xf32>, %b: memref<68xf32>, %shift: index,
                  %back: index) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %i0 = arith.muli %tx, %c4 : index
    %i = arith.addi %i0, %shift : index
    %v = vector.load %a[%i] {alignment = 16} : memref<66xf32>, vector<4xf32>
    vector.store %v, %b[%i0] {alignment = 16} : memref<68xf32>, vector<4xf32>
    %x = vector.extract %v[0] : f32 from vector<4xf32>
    %j = arith.subi %c64, %back : index
    memref.store %x, %b[%j] : memref<68xf32>
    gpu.terminator
  }
  return
}

func.func @gather(%positions: memref<16xindex>, %table: memref<16xvector<4xf32>>,
                  %out: memref<16xvector<4xf32>>) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %i = memref.load %positions[%tx] {alignment = 64} : memref<16xindex>
    %v = vector.load %table[%i] {alignment = 64} : memref<16xvector<4xf32>>, vector<4xf32>
    vector.store %v, %out[%tx] : memref<16xvector<4xf32>>, vector<4xf32>
    gpu.terminator
  }
  return
}

func.func @run(%shift: index, %back: index) {
  %a = memref.alloc() {alignment = 64} : memref<66xf32>
  %b = memref.alloc() {alignment = 64} : memref<68xf32>
  call @kernel(%a, %b, %shift, %back)
      : (memref<66xf32>, memref<68xf32>, index, index) -> ()
  memref.dealloc %a : memref<66xf32>
  memref.dealloc %b : memref<68xf32>
  return
}

// Every run at a multiple of 4, the last ending at element 63.
func.func @aligned() {
  %c0 = arith.constant 0 : index
  call @run(%c0, %c0) : (index, index) -> ()
  return
}

// Every run one element on: 4 bytes past a 16-byte boundary.
func.func @misaligned() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  call @run(%c1, %c0) : (index, index) -> ()
  return
}

// Aligned, but the last run of %a, [64, 67], ends past its 66 elements.
func.func @past_end() {
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  call @run(%c4, %c0) : (index, index) -> ()
  return
}

// The scalar store at 64 - 65 = -1: before the buffer's start.
func.func @before_start() {
  %c0 = arith.constant 0 : index
  %c65 = arith.constant 65 : index
  call @run(%c0, %c65) : (index, index) -> ()
  return
}
