//===- EmulatedEmbeddingGrad.cpp - EmbeddingGrad.cu for the emulator ------===//
//
// runtime/src/cuda/EmbeddingGrad.cu, kernels and host side, as plain C++
// over CudaEmulation.h (ANVIL_CUDA_EMULATION, set by the test's CMake
// target): anvil_rt_cuda_embedding_grad_f32 here runs its kernels on the
// CPU. Included rather than listed as a source so that the .cu file keeps
// its CUDA language in anvil_cuda. The CUDA device's functions it calls are
// EmulatedAttention.cpp's.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CUDA_EMULATION
#error "compile with ANVIL_CUDA_EMULATION defined"
#endif

#include "../../src/cuda/EmbeddingGrad.cu"
