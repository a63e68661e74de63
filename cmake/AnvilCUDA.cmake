#===- AnvilCUDA.cmake - find the CUDA toolkit, decide ANVIL_ENABLE_CUDA --===#
#
# ANVIL_ENABLE_CUDA=AUTO turns CUDA support on when a toolkit (nvcc and the
# CUDA libraries) is found, and off with a message saying how to get it
# otherwise. ON fails the configure when the toolkit is missing. Nothing here
# needs a GPU: CUDA code compiles and links on a machine without one.
#
#===----------------------------------------------------------------------===#

if(NOT ANVIL_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
endif()

if(ANVIL_ENABLE_CUDA STREQUAL "OFF")
  set(ANVIL_CUDA_FOUND OFF)
  message(STATUS "Anvil: CUDA support OFF (ANVIL_ENABLE_CUDA=OFF)")
elseif(CUDAToolkit_FOUND)
  set(ANVIL_CUDA_FOUND ON)
  message(STATUS "Anvil: CUDA support ON (toolkit ${CUDAToolkit_VERSION} at "
                 "${CUDAToolkit_BIN_DIR}/..; ptxas: ${CUDAToolkit_BIN_DIR}/ptxas)")
elseif(ANVIL_ENABLE_CUDA STREQUAL "ON")
  message(FATAL_ERROR
    "Anvil: ANVIL_ENABLE_CUDA=ON but no CUDA toolkit was found. Install it "
    "(nvcc, cuBLAS, cuDNN, NCCL) or point CUDAToolkit_ROOT at it.")
else()
  set(ANVIL_CUDA_FOUND OFF)
  message(STATUS "Anvil: CUDA support OFF: no CUDA toolkit found (looked in "
                 "/usr/local/cuda and PATH). Set CUDAToolkit_ROOT to enable it.")
endif()

# The value the rest of the build reads: a plain boolean.
set(ANVIL_ENABLE_CUDA_BOOL ${ANVIL_CUDA_FOUND} CACHE INTERNAL "")
