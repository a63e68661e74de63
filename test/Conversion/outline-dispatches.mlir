// RUN: anvil-opt %s --anvil-outline-dispatches | FileCheck %s
// RUN: anvil-opt %s --anvil-outline-dispatches=fills-into-reductions=true | FileCheck %s --check-prefix=FILLS

// Tests anvil-outline-dispatches: each top-level linalg op of a bufferized
// function becomes a private function and a call; with
// fills-into-reductions, a fill and the reduction with parallel loops that
// it initializes (past a view) make one.

// CHECK-LABEL: func.func @step
// CHECK-COUNT-8: call @step__dispatch_
// CHECK-NOT: call

// The rows' sums with their fill, one dispatch.
// FILLS: func.func private @step__dispatch_0(%[[S:.+]]: memref<8xf32>, %[[ROWS:.+]]: memref<8x8xf32>)
// FILLS: linalg.fill ins(%{{.+}} : f32) outs(%[[S]] : memref<8xf32>)
// FILLS-NEXT: linalg.generic {{.+}}iterator_types = ["parallel", "reduction"]} ins(%[[ROWS]] : memref<8x8xf32>) outs(%[[S]] : memref<8xf32>)
// The whole tensor's maximum keeps its fill apart (its blocks fold into
// the output atomically).
// FILLS: func.func private @step__dispatch_1(
// FILLS-NEXT: arith.constant
// FILLS-NEXT: linalg.fill
// FILLS-NEXT: return
// FILLS: func.func private @step__dispatch_2(
// FILLS-NOT: linalg.fill
// FILLS: iterator_types = ["reduction", "reduction"]
// So does a fill that the next reduction does not write, and a fill before
// an elementwise op (the same fill: one function, called twice).
// FILLS: func.func private @step__dispatch_3(
// FILLS-NEXT: arith.constant
// FILLS-NEXT: linalg.fill
// FILLS-NEXT: return
// FILLS-LABEL: func.func @step
// FILLS: %[[R:.+]] = memref.expand_shape %arg0
// FILLS-NEXT: call @step__dispatch_0(%arg1, %[[R]])
// FILLS-NEXT: call @step__dispatch_1(%arg2)
// FILLS-NEXT: call @step__dispatch_2(%[[R]], %arg2)
// FILLS-NEXT: call @step__dispatch_3(%arg1)
// FILLS-NEXT: call @step__dispatch_4(%[[R]], %arg3)
// FILLS-NEXT: call @step__dispatch_3(%arg3)
// FILLS-NEXT: call @step__dispatch_6(%arg3)
// FILLS-NOT: call
func.func @step(%x: memref<64xf32>, %s: memref<8xf32>, %m: memref<f32>, %t: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %low = arith.constant 0xFF800000 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  %rows = memref.expand_shape %x [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%low : f32) outs(%m : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%rows : memref<8x8xf32>) outs(%m : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<8x8xf32>) outs(%t : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%t : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%t : memref<8xf32>) {
  ^bb0(%o: f32):
    %r = arith.negf %o : f32
    linalg.yield %r : f32
  }
  return
}

// A merged reduction's outputs, each filled: both fills join its dispatch
// (the first passes the second), in their order.
// CHECK-LABEL: func.func @two_fills
// FILLS: func.func private @[[$SUMS:two_fills__dispatch_[0-9]+]](%[[A:.+]]: memref<8xf32>, %[[B:.+]]: memref<8xf32>, %[[ROWS:.+]]: memref<8x8xf32>)
// FILLS: linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<8xf32>)
// FILLS-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%[[B]] : memref<8xf32>)
// FILLS-NEXT: linalg.generic {{.+}} outs(%[[A]], %[[B]] : memref<8xf32>, memref<8xf32>)
// FILLS-LABEL: func.func @two_fills
// FILLS: call @[[$SUMS]](%arg1, %arg2, %{{.+}})
// FILLS-NOT: call
func.func @two_fills(%x: memref<64xf32>, %a: memref<8xf32>, %b: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %rows = memref.expand_shape %x [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<8xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<8x8xf32>) outs(%a, %b : memref<8xf32>, memref<8xf32>) {
  ^bb0(%v: f32, %p: f32, %q: f32):
    %r = arith.addf %v, %p : f32
    %m = arith.maximumf %v, %q : f32
    linalg.yield %r, %m : f32, f32
  }
  return
}

// A fill of a buffer the reduction does not write (here the whole of one
// whose start the reduction's output views) stays where it is, and so does
// the fill before it: the reduction starts from the later fill's 1.0, as
// written.
// FILLS-LABEL: func.func @other_fill_between
// FILLS: %[[A:.+]] = memref.subview %arg1
// FILLS-NEXT: call @{{.+}}__dispatch_{{[0-9]+}}(%[[A]])
// FILLS-NEXT: call @{{.+}}__dispatch_{{[0-9]+}}(%arg1)
// FILLS-NEXT: call @{{.+}}__dispatch_{{[0-9]+}}(%arg0, %[[A]])
// FILLS-NOT: call
func.func @other_fill_between(%x: memref<8x8xf32>, %c: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %a = memref.subview %c[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  linalg.fill ins(%zero : f32) outs(%a : memref<8xf32, strided<[1]>>)
  linalg.fill ins(%one : f32) outs(%c : memref<16xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x8xf32>) outs(%a : memref<8xf32, strided<[1]>>) {
  ^bb0(%v: f32, %p: f32):
    %r = arith.addf %v, %p : f32
    linalg.yield %r : f32
  }
  return
}

// A reduction that reads the filled buffer (through a view) keeps the fill
// apart: its input must hold the fill's values.
// CHECK-LABEL: func.func @reads_filled
// FILLS-LABEL: func.func @reads_filled
// FILLS: call @{{.+}}__dispatch_{{[0-9]+}}(%arg1) : (memref<8xf32>) -> ()
// FILLS-NEXT: memref.expand_shape
// FILLS-NEXT: memref.expand_shape
// FILLS-NEXT: call @reads_filled__dispatch_1(
// FILLS-NOT: call
func.func @reads_filled(%x: memref<64xf32>, %t: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%t : memref<8xf32>)
  %rows = memref.expand_shape %x [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %col = memref.expand_shape %t [[0, 1]] output_shape [8, 1] : memref<8xf32> into memref<8x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows, %col : memref<8x8xf32>, memref<8x1xf32>) outs(%t : memref<8xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %r = arith.addf %p, %acc : f32
    linalg.yield %r : f32
  }
  return
}
