# Installation of libneuron (component "neuron"): headers, the shared
# library, pkg-config file and CMake package (find_package(neuron) ->
# neuron::neuron). Both are relocatable.
include(CMakePackageConfigHelpers)

set(NEURON_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/neuron)

install(TARGETS neuron EXPORT neuronTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT neuron NAMELINK_COMPONENT neuron
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT neuron
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT neuron)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/neuron
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT neuron
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/include/neuron/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/neuron COMPONENT neuron)
install(EXPORT neuronTargets NAMESPACE neuron:: DESTINATION ${NEURON_CMAKE_DIR}
  COMPONENT neuron)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/neuronConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/neuronConfig.cmake
  INSTALL_DESTINATION ${NEURON_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/neuronConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
configure_file(${CMAKE_CURRENT_LIST_DIR}/neuron.pc.in ${CMAKE_CURRENT_BINARY_DIR}/neuron.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/neuronConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/neuronConfigVersion.cmake
  DESTINATION ${NEURON_CMAKE_DIR} COMPONENT neuron)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/neuron.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT neuron)
