#===- AnvilInstall.cmake - cmake --install: tools, libraries, headers ----===#
#
#   cmake --install build --prefix <prefix>
#
# installs
#   bin/       anvil-compile, anvil-opt, anvil-interp, anvil-plan,
#              anvil-run, anvil-inspect, anvil-make-shard
#   share/anvil/  hardware.json (anvil-plan's GPUs, found as
#              ../share/anvil beside the tool)
#   lib/       the runtime's libraries, which anvil-compile --target=cpu
#              links into executables (found as ../lib beside the tool);
#              the compiler's static libraries
#   include/   the headers and ODS files of the dialect, the compiler and
#              the runtime, generated ones included
#   lib/cmake/anvil/  AnvilConfig.cmake, AnvilTargets.cmake (Anvil::*),
#              AnvilPlugin.cmake (anvil_add_plugin)
# so that a plugin builds against it out of tree with find_package(Anvil).
#
#===----------------------------------------------------------------------===#

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The runtime: libraries that executables link, and its tools.
set(_anvil_runtime_libs anvil_runtime anvil_cpu anvil_trainer anvil_single)
foreach(_lib anvil_mpi anvil_cuda)
  if(TARGET ${_lib})
    list(APPEND _anvil_runtime_libs ${_lib})
  endif()
endforeach()
install(TARGETS ${_anvil_runtime_libs}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT anvil)
if(ANVIL_CUDA_KERNEL_REPORTS)
  install(FILES ${ANVIL_CUDA_KERNEL_REPORTS}
    DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT anvil)
endif()
install(TARGETS anvil-run anvil-inspect anvil-make-shard
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT anvil)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT anvil)

if(ANVIL_BUILD_COMPILER)
  # Tools found as ../lib beside themselves: the runtime above; LLVM's
  # shared library through the rpath to Debian's LLVM.
  set_target_properties(anvil-compile anvil-opt anvil-interp anvil-plan
    PROPERTIES INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
  install(TARGETS anvil-compile anvil-opt anvil-interp
    EXPORT AnvilTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT anvil)
  install(TARGETS anvil-plan
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT anvil)
  install(FILES ${PROJECT_SOURCE_DIR}/compiler/tools/anvil-plan/hardware.json
    DESTINATION ${CMAKE_INSTALL_DATADIR}/anvil COMPONENT anvil)
  set(_anvil_compiler_libs AnvilDialect AnvilConversion AnvilFusion
      AnvilTraining AnvilTransforms AnvilTargetCPU AnvilInterp AnvilFrontend)
  install(TARGETS ${_anvil_compiler_libs}
    EXPORT AnvilTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT anvil)
  foreach(_lib ${_anvil_compiler_libs})
    target_include_directories(${_lib} INTERFACE
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  endforeach()

  # Headers and ODS files, sources and generated.
  foreach(_dir dialects/include compiler/include frontends/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir}/
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT anvil
      FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
  endforeach()
  foreach(_dir dialects/include compiler/include)
    install(DIRECTORY ${PROJECT_BINARY_DIR}/${_dir}/
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT anvil
      FILES_MATCHING PATTERN "*.inc"
      PATTERN "CMakeFiles" EXCLUDE)
  endforeach()

  set(_anvil_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/anvil)
  install(EXPORT AnvilTargets NAMESPACE Anvil::
    DESTINATION ${_anvil_cmake_dir} COMPONENT anvil)
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/AnvilConfig.cmake.in
    ${PROJECT_BINARY_DIR}/cmake/AnvilConfig.cmake
    INSTALL_DESTINATION ${_anvil_cmake_dir}
    PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/cmake/AnvilConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES
    ${PROJECT_BINARY_DIR}/cmake/AnvilConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/AnvilConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/AnvilPlugin.cmake
    DESTINATION ${_anvil_cmake_dir} COMPONENT anvil)
endif()
