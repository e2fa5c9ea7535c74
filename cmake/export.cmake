# mcpfan as a CMake package: `find_package(mcpfan CONFIG REQUIRED)` gives
# mcpfan::engine (the engine: Hub, Shard, payloads, tenants) and mcpfan::server (the network
# Server, which links the engine). Hosts that add_subdirectory()/FetchContent mcpfan get the same
# names as ALIAS targets. Installs: the two static libraries, the public headers
# (engine/include, transports/include) under include/, and lib/cmake/mcpfan/.
#
# Self-contained: only the rules for the exported targets live here (packaging, e.g. CPack,
# belongs elsewhere). Included from the top-level CMakeLists.txt after the libraries exist.
# Component "dev" (in a default `cmake --install`; cmake/package.cmake packs it as mcpfan-dev).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library(mcpfan::engine ALIAS mcpfan_engine)
add_library(mcpfan::server ALIAS mcpfan_transports)
set_target_properties(mcpfan_engine PROPERTIES EXPORT_NAME engine)
set_target_properties(mcpfan_transports PROPERTIES EXPORT_NAME server)

# MCPFAN_INSTALL (the top CMakeLists.txt): a host that add_subdirectory()s mcpfan decides itself what it installs.
if(NOT MCPFAN_INSTALL)
  return()
endif()

set(MCPFAN_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/mcpfan")

install(TARGETS mcpfan_engine mcpfan_transports EXPORT mcpfanTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev)
# (Their INTERFACE_INCLUDE_DIRECTORIES already name include/ through $<INSTALL_INTERFACE>.)
# The public headers only: engine/src and transports/src stay private.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/engine/include/" "${PROJECT_SOURCE_DIR}/transports/include/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT dev
  FILES_MATCHING PATTERN "*.h")
install(FILES "${PROJECT_BINARY_DIR}/generated/include/mcpfan/version.h"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/mcpfan" COMPONENT dev)
install(EXPORT mcpfanTargets NAMESPACE mcpfan:: FILE mcpfanTargets.cmake
  DESTINATION "${MCPFAN_CMAKE_DIR}" COMPONENT dev)

if(MCPFAN_WITH_NATS)
  set(MCPFAN_NATS_PKG [["LIBNATS;libnats"]])
else()
  set(MCPFAN_NATS_PKG "")
endif()
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/mcpfanConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/mcpfanConfig.cmake" INSTALL_DESTINATION "${MCPFAN_CMAKE_DIR}")
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/mcpfanConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/mcpfanConfig.cmake" "${PROJECT_BINARY_DIR}/mcpfanConfigVersion.cmake"
  DESTINATION "${MCPFAN_CMAKE_DIR}" COMPONENT dev)
