// A module with its own @write: anvil-cuda-emulate-launches' access checks,
// which call libc's write(2), refuse it (emulate-checks.mlir).
func.func private @write(i32) -> ()

func.func @kernel(%a: memref<16xf32>) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%tx] : memref<16xf32>
    memref.store %x, %a[%tx] : memref<16xf32>
    gpu.terminator
  }
  return
}
