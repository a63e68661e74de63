#===- AnvilMLIR.cmake - find LLVM/MLIR 22 and set up its CMake helpers ---===#
#
# Debian ships LLVM 22 under /usr/lib/llvm-22 next to older versions, so the
# config directories are pinned there unless the caller passes MLIR_DIR.
# lit is /usr/lib/llvm-22/bin/lit (Debian has no llvm-lit).
#
#===----------------------------------------------------------------------===#

set(ANVIL_LLVM_PREFIX /usr/lib/llvm-22 CACHE PATH "LLVM/MLIR 22 install prefix")
if(NOT MLIR_DIR)
  set(MLIR_DIR ${ANVIL_LLVM_PREFIX}/lib/cmake/mlir)
endif()
if(NOT LLVM_DIR)
  set(LLVM_DIR ${ANVIL_LLVM_PREFIX}/lib/cmake/llvm)
endif()

# MLIR's version file accepts only exact versions, so check the major here.
find_package(MLIR REQUIRED CONFIG)
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "Anvil needs LLVM/MLIR 22, found ${LLVM_PACKAGE_VERSION} "
                      "at ${MLIR_DIR}; run scripts/setup.sh or pass -DMLIR_DIR=")
endif()
message(STATUS "Anvil: MLIR from ${MLIR_DIR}, LLVM ${LLVM_PACKAGE_VERSION}")

set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

# add_mlir_doc attaches its generators to `mlir-doc` (MLIR's CMake may have
# made it already); docs/ builds it by default and compares the result with
# the committed reference.
if(NOT TARGET mlir-doc)
  add_custom_target(mlir-doc)
endif()

if(NOT LLVM_EXTERNAL_LIT)
  set(LLVM_EXTERNAL_LIT ${ANVIL_LLVM_PREFIX}/bin/lit CACHE FILEPATH "lit")
endif()

# Applied per directory (not globally) so the runtime never sees LLVM flags.
macro(anvil_use_mlir)
  include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  include_directories(${PROJECT_SOURCE_DIR}/dialects/include
                      ${PROJECT_BINARY_DIR}/dialects/include
                      ${PROJECT_SOURCE_DIR}/compiler/include
                      ${PROJECT_BINARY_DIR}/compiler/include)
  separate_arguments(_anvil_llvm_defs NATIVE_COMMAND ${LLVM_DEFINITIONS})
  add_definitions(${_anvil_llvm_defs})
  add_compile_options(-Werror=deprecated-declarations)
endmacro()
