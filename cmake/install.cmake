# Install rules for embedding hosts: the libraries, the public headers and a CMake package, so
# that `find_package(mcpfan CONFIG REQUIRED)` gives `mcpfan::engine` and `mcpfan::server`.
# Component "dev" (the mcpfan-dev Debian package, cmake/package.cmake).
#
# Kept in this one file on purpose: issue 13 part 1 (embedding) may replace it whole; nothing
# else in the tree depends on it. Included from the top CMakeLists.txt when MCPFAN_INSTALL is on.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MCPFAN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mcpfan)

# The targets' include directories are source paths (engine/include, transports/include);
# an installed consumer finds the same headers under <prefix>/include.
foreach(_t IN ITEMS mcpfan_engine mcpfan_transports)
  get_target_property(_inc ${_t} INTERFACE_INCLUDE_DIRECTORIES)
  set(_wrapped "")
  foreach(_d IN LISTS _inc)
    list(APPEND _wrapped "$<BUILD_INTERFACE:${_d}>")
  endforeach()
  list(APPEND _wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_wrapped}")
  get_target_property(_sys ${_t} INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
  if(_sys)
    set_target_properties(${_t} PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "$<BUILD_INTERFACE:${_sys}>")
  endif()
endforeach()
set_target_properties(mcpfan_engine PROPERTIES EXPORT_NAME engine)
set_target_properties(mcpfan_transports PROPERTIES EXPORT_NAME server)

# Static libraries: their private dependencies (libuv, http-parser, libcrypto, nats.c,
# simdjson, and the compile-flags interface target, link-only) travel with the export.
install(TARGETS mcpfan_engine mcpfan_transports mcpfan_flags
        EXPORT mcpfanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/engine/include/mcpfan ${PROJECT_SOURCE_DIR}/transports/include/mcpfan
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(EXPORT mcpfanTargets NAMESPACE mcpfan:: DESTINATION ${MCPFAN_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mcpfanConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/mcpfanConfig.cmake INSTALL_DESTINATION ${MCPFAN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mcpfanConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mcpfanConfig.cmake ${PROJECT_BINARY_DIR}/mcpfanConfigVersion.cmake
        DESTINATION ${MCPFAN_CMAKE_DIR} COMPONENT dev)
