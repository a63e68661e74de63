//===- Cudnn.h - the process's cuDNN, shared by its callers ---------------===//
//
// cuDNN 9 is opened once (Conv.cpp) and has one handle on the step stream;
// the convolutions (Conv.cpp) and the fused attention (CudnnAttention.cpp)
// share both. Private to runtime/src/cuda.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_CUDA_CUDNN_H
#define ANVIL_RUNTIME_CUDA_CUDNN_H

#include "anvil/runtime/Status.h"

#include <cudnn.h>

namespace anvil::rt::cuda {

/// libcudnn.so.9's dlopen handle, or why it cannot be used (missing, an
/// entry point absent, not a cuDNN 9); the first call opens it.
Expected<void *> cudnnLibrary();

/// The process's cuDNN handle, created on first use on the step stream
/// (the device initialized first); a failure aborts, naming `caller`.
/// cudnnLibrary() must have succeeded.
cudnnHandle_t cudnnHandle(const char *caller);

} // namespace anvil::rt::cuda

#endif // ANVIL_RUNTIME_CUDA_CUDNN_H
