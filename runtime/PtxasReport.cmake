#===- runtime/PtxasReport.cmake - what ptxas says of the runtime's kernels -===#
#
#   cmake -DNVCC=... -DHOST=... -DFLAGS="..." -DINCLUDE=... \
#         -DSOURCES=a.cu,b.cu -DARCH=90 -DCUBIN_DIR=... -DREPORT=... \
#         -P PtxasReport.cmake
#
# Compiles each of SOURCES (comma-separated) for sm_ARCH with the build's
# host compiler (HOST) and CUDA flags (FLAGS: CMAKE_CUDA_FLAGS and the
# build type's), a cubin each in CUBIN_DIR, and writes ptxas -v's report of
# every kernel (registers, stack, spills) of them all to REPORT.
#
#===----------------------------------------------------------------------===#

separate_arguments(flags UNIX_COMMAND "${FLAGS}")
string(REPLACE "," ";" sources "${SOURCES}")
file(WRITE ${REPORT} "")
foreach(source ${sources})
  get_filename_component(stem ${source} NAME_WE)
  execute_process(
    COMMAND ${NVCC} -ccbin=${HOST} ${flags} -I${INCLUDE} -std=c++17
            -arch=sm_${ARCH} -cubin -Xptxas -v ${source}
            -o ${CUBIN_DIR}/${stem}.sm_${ARCH}.cubin
    OUTPUT_VARIABLE out ERROR_VARIABLE out
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc -Xptxas -v of ${source} for sm_${ARCH} failed:\n${out}")
  endif()
  file(APPEND ${REPORT} "${out}")
endforeach()
