// RUN: anvil-opt %s --pass-pipeline='builtin.module(gpu.module(anvil-cuda-small-grid-occupancy))' | FileCheck %s
// RUN: anvil-opt %s --pass-pipeline='builtin.module(gpu.module(anvil-cuda-small-grid-occupancy{max-blocks=2}))' | FileCheck %s --check-prefix=TWO
// RUN: anvil-opt %s --pass-pipeline='builtin.module(gpu.module(anvil-cuda-small-grid-occupancy,convert-gpu-to-nvvm))' | FileCheck %s --check-prefix=NVVM

// Tests anvil-cuda-small-grid-occupancy: a kernel whose known grid has at
// most max-blocks (108) blocks asks for one block an SM
// (nvvm.minctasm = 1), so that ptxas need not spill to fit a higher
// occupancy; a larger grid, a function that is not a kernel, a kernel of
// unknown grid and one that already asks for an occupancy are left alone.

// CHECK-LABEL: gpu.func @three_blocks
// CHECK-SAME:    nvvm.minctasm = 1 : i32
// CHECK-LABEL: gpu.func @sms
// CHECK-SAME:    nvvm.minctasm = 1 : i32
// CHECK-LABEL: gpu.func @more_than_sms
// CHECK-NOT:     nvvm.minctasm
// CHECK-LABEL: gpu.func @unknown
// CHECK-NOT:     nvvm.minctasm
// CHECK-LABEL: gpu.func @asked
// CHECK-SAME:    nvvm.minctasm = 2 : i32
// CHECK-LABEL: gpu.func @helper
// CHECK-NOT:     nvvm.minctasm
// The attribute reaches the NVVM kernel (PTX's .minnctapersm).
// NVVM-LABEL: llvm.func @three_blocks
// NVVM-SAME:    nvvm.kernel
// NVVM-SAME:    nvvm.minctasm = 1 : i32
// NVVM-LABEL: llvm.func @more_than_sms
// NVVM-NOT:     nvvm.minctasm
// NVVM-LABEL: llvm.func @unknown
// TWO-LABEL: gpu.func @three_blocks
// TWO-NOT:     nvvm.minctasm
// TWO-LABEL: gpu.func @sms
gpu.module @kernels {
  gpu.func @three_blocks(%a: memref<768xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 3, 1, 1>} {
    gpu.return
  }
  gpu.func @sms(%a: memref<768xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 27, 1>} {
    gpu.return
  }
  gpu.func @more_than_sms(%a: memref<768xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 109, 1, 1>} {
    gpu.return
  }
  gpu.func @unknown(%a: memref<768xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    gpu.return
  }
  gpu.func @asked(%a: memref<768xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>, nvvm.minctasm = 2 : i32} {
    gpu.return
  }
  gpu.func @helper(%a: memref<768xf32>) attributes {known_grid_size = array<i32: 1, 1, 1>} {
    gpu.return
  }
}
