# Installation of the compiler (component "compiler", next to libneuron's
# "neuron"): headers, libneuron-compiler.so.0, neuron-compiler.pc, a CMake
# package (find_package(neuron-compiler) -> neuron::compiler), neuron-cc and
# its man page.
include(CMakePackageConfigHelpers)

set(NEURON_COMPILER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/neuron-compiler)

install(TARGETS neuron_compiler EXPORT neuronCompilerTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT compiler NAMELINK_COMPONENT compiler
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT compiler)
install(TARGETS neuron-cc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT compiler)
install(FILES ${PROJECT_SOURCE_DIR}/compiler/neuron-cc/neuron-cc.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT compiler)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/neuron/compiler
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/neuron COMPONENT compiler
  FILES_MATCHING PATTERN "*.hpp")
install(EXPORT neuronCompilerTargets NAMESPACE neuron:: DESTINATION ${NEURON_COMPILER_CMAKE_DIR}
  COMPONENT compiler)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/neuron-compilerConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/neuron-compilerConfig.cmake
  INSTALL_DESTINATION ${NEURON_COMPILER_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/neuron-compilerConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
configure_file(${CMAKE_CURRENT_LIST_DIR}/neuron-compiler.pc.in
  ${CMAKE_CURRENT_BINARY_DIR}/neuron-compiler.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/neuron-compilerConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/neuron-compilerConfigVersion.cmake
  DESTINATION ${NEURON_COMPILER_CMAKE_DIR} COMPONENT compiler)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/neuron-compiler.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT compiler)
