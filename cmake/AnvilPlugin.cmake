#===- AnvilPlugin.cmake - build a plugin for anvil-compile and anvil-opt -===#
#
#   anvil_add_plugin(<name> <source>...)
#
# makes lib<name>.so, a MODULE library that anvil-compile and anvil-opt load
# with --load-pass-plugin / --load-dialect-plugin. The plugin links no MLIR
# and no Anvil library of its own: the tools export their symbols (MLIR is
# linked into them statically), and a second copy of MLIR's registries in
# the plugin would not be the tools' ones. It compiles against the headers
# of the Anvil (ANVIL_INCLUDE_DIRS) and MLIR/LLVM the tools were built
# from, with LLVM's definitions.
#
# Used in Anvil's own build (examples/pass-plugin) and, installed beside
# AnvilConfig.cmake, by plugins built out of tree after find_package(Anvil).
# ODS files are compiled with MLIR's mlir_tablegen as usual; call
# include_directories(${ANVIL_INCLUDE_DIRS}) first so that they can include
# Anvil's interfaces (anvil/Dialect/Anvil/IR/AnvilInterfaces.td).
#
#===----------------------------------------------------------------------===#

function(anvil_add_plugin name)
  add_library(${name} MODULE ${ARGN})
  target_compile_features(${name} PRIVATE cxx_std_20)
  target_include_directories(${name} SYSTEM PRIVATE
    ${ANVIL_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS} ${LLVM_INCLUDE_DIRS})
  target_include_directories(${name} PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR})
  separate_arguments(_anvil_llvm_defs NATIVE_COMMAND "${LLVM_DEFINITIONS}")
  target_compile_options(${name} PRIVATE ${_anvil_llvm_defs})
  # Undefined symbols are the tools' to resolve at load time.
  set_target_properties(${name} PROPERTIES PREFIX "lib")
endfunction()
