# Fails if a runtime source includes an MLIR or LLVM header: the runtime and
# the executables linked against it must never depend on MLIR or LLVM.
file(GLOB_RECURSE sources ${RUNTIME_DIR}/*.h ${RUNTIME_DIR}/*.cpp
     ${RUNTIME_DIR}/*.cu ${RUNTIME_DIR}/*.cuh)
set(offenders)
foreach(f ${sources})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](mlir|llvm|llvm-c|mlir-c)/")
  if(lines)
    list(APPEND offenders "${f}: ${lines}")
  endif()
endforeach()
if(offenders)
  string(REPLACE ";" "\n  " msg "${offenders}")
  message(FATAL_ERROR "the runtime includes MLIR/LLVM headers:\n  ${msg}")
endif()
list(LENGTH sources n)
message(STATUS "runtime isolation: ${n} files, no MLIR/LLVM includes")
