#===- AnvilCUDA.cmake - find the CUDA toolkit, decide ANVIL_ENABLE_CUDA --===#
#
# ANVIL_ENABLE_CUDA=AUTO (the default) turns CUDA support on when a toolkit
# (nvcc and the CUDA libraries) is found, and off with a message saying how
# to get it otherwise. A true value (ON, TRUE, 1, YES; any case) requires the
# toolkit and fails the configure without it; a false one turns CUDA off.
# Nothing here needs a GPU: CUDA code compiles and links without one.
#
#===----------------------------------------------------------------------===#

string(TOUPPER "${ANVIL_ENABLE_CUDA}" _anvil_cuda_request)
if(_anvil_cuda_request STREQUAL "AUTO")
  set(_anvil_cuda_mode AUTO)
elseif(ANVIL_ENABLE_CUDA)
  set(_anvil_cuda_mode REQUIRED)
else()
  set(_anvil_cuda_mode OFF)
endif()

if(NOT _anvil_cuda_mode STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
endif()

if(_anvil_cuda_mode STREQUAL "OFF")
  set(ANVIL_CUDA_FOUND OFF)
  message(STATUS "Anvil: CUDA support OFF (ANVIL_ENABLE_CUDA=${ANVIL_ENABLE_CUDA})")
elseif(CUDAToolkit_FOUND)
  set(ANVIL_CUDA_FOUND ON)
  message(STATUS "Anvil: CUDA support ON (toolkit ${CUDAToolkit_VERSION} at "
                 "${CUDAToolkit_BIN_DIR}/..; ptxas: ${CUDAToolkit_BIN_DIR}/ptxas)")
elseif(_anvil_cuda_mode STREQUAL "REQUIRED")
  message(FATAL_ERROR
    "Anvil: ANVIL_ENABLE_CUDA=${ANVIL_ENABLE_CUDA} but no CUDA toolkit was "
    "found. Install it (nvcc, cuBLAS, cuDNN, NCCL) or point CUDAToolkit_ROOT "
    "at it, or configure with -DANVIL_ENABLE_CUDA=AUTO.")
else()
  set(ANVIL_CUDA_FOUND OFF)
  message(STATUS "Anvil: CUDA support OFF: no CUDA toolkit found (looked in "
                 "/usr/local/cuda and PATH). Set CUDAToolkit_ROOT to enable it.")
endif()

# The value the rest of the build reads: a plain boolean.
set(ANVIL_ENABLE_CUDA_BOOL ${ANVIL_CUDA_FOUND} CACHE INTERNAL "")
