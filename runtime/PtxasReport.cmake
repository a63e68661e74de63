#===- runtime/PtxasReport.cmake - what ptxas says of the runtime's kernels -===#
#
#   cmake -DNVCC=... -DHOST=... -DFLAGS="..." -DINCLUDE=... -DSOURCE=... \
#         -DARCH=90 -DCUBIN=... -DREPORT=... -P PtxasReport.cmake
#
# Compiles SOURCE for sm_ARCH with the build's host compiler (HOST) and
# CUDA flags (FLAGS: CMAKE_CUDA_FLAGS and the build type's) and writes
# ptxas -v's report of every kernel (registers, stack, spills) to REPORT.
#
#===----------------------------------------------------------------------===#

separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND ${NVCC} -ccbin=${HOST} ${flags} -I${INCLUDE} -std=c++17
          -arch=sm_${ARCH} -cubin -Xptxas -v ${SOURCE} -o ${CUBIN}
  OUTPUT_FILE ${REPORT} ERROR_FILE ${REPORT}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(READ ${REPORT} log)
  message(FATAL_ERROR "nvcc -Xptxas -v of ${SOURCE} for sm_${ARCH} failed:\n${log}")
endif()
