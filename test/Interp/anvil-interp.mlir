// Tests of the anvil-interp command line: random and .npy arguments,
// determinism, rounding, results as .npy, and the errors.

// RUN: anvil-interp %s --function=affine --seed=5 --print > %t.a
// RUN: anvil-interp %s --function=affine --seed=5 --print > %t.b
// RUN: diff %t.a %t.b
// RUN: anvil-interp %s --function=affine --seed=6 --print > %t.c
// RUN: not diff %t.a %t.c

// Parameters follow their initializers (ones, constant(0.5)), so with x
// read from a file, y = x * 1 + 0.5; results are written as float64 .npy.
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: %numpy_python -c "import numpy; numpy.save('%t.dir/x.npy', numpy.array([1.0, -2.0], dtype=numpy.float32))"
// RUN: anvil-interp %s --function=affine --input x=%t.dir/x.npy --output-dir=%t.dir --print | FileCheck %s --check-prefix=FILE
// FILE: result #0: f32 [1.5, -1.5]
// RUN: %numpy_python -c "import numpy; r = numpy.load('%t.dir/result0.npy'); print(r.dtype, r.shape, r.tolist())" | FileCheck %s --check-prefix=NPY
// NPY: float64 (2,) [1.5, -1.5]
// RUN: anvil-interp %s --function=affine --inputs-dir=%t.dir --print | FileCheck %s --check-prefix=FILE

func.func @affine(%x: tensor<2xf32> {anvil.input = #anvil.input<name = "x">},
                  %w: tensor<2xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<ones>>},
                  %b: tensor<2xf32> {anvil.param = #anvil.param<name = "b", init = #anvil.init<constant(value = 0.5)>>}) -> tensor<2xf32> {
  %0 = anvil.mul %x, %w : tensor<2xf32>
  %1 = anvil.add %0, %b : tensor<2xf32>
  return %1 : tensor<2xf32>
}

// With --round every result is rounded to bf16: 1 + 2^-9 becomes 1.
// RUN: anvil-interp %s --function=bf16 --print | FileCheck %s --check-prefix=EXACT
// RUN: anvil-interp %s --function=bf16 --round --print | FileCheck %s --check-prefix=ROUND
// EXACT: result #0: bf16 [1.001953125]
// ROUND: result #0: bf16 [1]
func.func @bf16() -> tensor<1xbf16> {
  %one = anvil.constant dense<1.0> : tensor<1xbf16>
  %tiny = anvil.constant dense<0.001953125> : tensor<1xbf16>
  %r = anvil.add %one, %tiny : tensor<1xbf16>
  return %r : tensor<1xbf16>
}

// Errors.
// RUN: not anvil-interp %s --function=nope 2>&1 | FileCheck %s --check-prefix=NOFN
// NOFN: error: no function @nope in {{.+}} (it has: @affine, @bf16, @dynamic, @bytes)
// RUN: not anvil-interp %s --function=affine --input y=%t.dir/x.npy 2>&1 | FileCheck %s --check-prefix=NONAME
// NONAME: error: --input names no argument: 'y'
// RUN: not anvil-interp %s --function=affine --input w=%t.dir/missing.npy 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: argument 'w': '{{.+}}missing.npy': cannot read
// RUN: not anvil-interp %s --function=bf16 --input x=%t.dir/x.npy 2>&1 | FileCheck %s --check-prefix=NONAME2
// NONAME2: error: --input names no argument: 'x'
// RUN: %numpy_python -c "import numpy; numpy.save('%t.dir/x3.npy', numpy.zeros(3))"
// RUN: not anvil-interp %s --function=affine --input x=%t.dir/x3.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: argument 'x' from '{{.+}}x3.npy' has shape [3], the function expects tensor<2xf32>
// RUN: not anvil-interp %s --function=dynamic 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: anvil-interp.mlir:[[@LINE+1]]:1: error: anvil-interp: argument #0 has the dynamic shape 'tensor<?xf32>'; the interpreter needs static shapes
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// RUN: not anvil-interp %s --function=bytes 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: anvil-interp.mlir:[[@LINE+1]]:1: error: anvil-interp: argument #0 has the unsupported element type 'i8'
func.func @bytes(%x: tensor<2xi8>) -> tensor<2xi8> {
  return %x : tensor<2xi8>
}
