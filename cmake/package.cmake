# "Installed like a service" (issue 13 part 2): the mcpfan program as a systemd service, and
# the Debian packages (cpack -G DEB):
#   mcpfan      /usr/bin/mcpfan, /usr/bin/mcpfan-token, /lib/systemd/system/mcpfan.service,
#               /etc/mcpfan/mcpfan.toml (a conffile), maintainer scripts (packaging/debian)
#   mcpfan-dev  headers, static libraries and the CMake package (cmake/install.cmake)
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for packages (tests/package/run.sh does):
# with that prefix the unit and the config go to /lib/systemd/system and /etc, and the unit
# names /usr/bin/mcpfan. With another prefix (a plain `cmake --install`) both stay under it.
include(GNUInstallDirs)

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(MCPFAN_UNIT_DIR /lib/systemd/system)
else()
  set(MCPFAN_UNIT_DIR ${CMAKE_INSTALL_LIBDIR}/systemd/system)
endif()
set(MCPFAN_CONFIG_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/mcpfan)  # /etc/mcpfan under /usr (GNUInstallDirs)

install(TARGETS mcpfan mcpfan-token RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT mcpfan)
configure_file(${PROJECT_SOURCE_DIR}/packaging/mcpfan.service.in ${PROJECT_BINARY_DIR}/packaging/mcpfan.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/mcpfan.service DESTINATION ${MCPFAN_UNIT_DIR} COMPONENT mcpfan)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/mcpfan.toml DESTINATION ${MCPFAN_CONFIG_DIR} COMPONENT mcpfan)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT mcpfan)  # the unit's Documentation=

# ---- CPack: one .deb per component ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mcpfan)
set(CPACK_PACKAGE_VENDOR "mcpfan")
set(CPACK_PACKAGE_CONTACT "mcpfan maintainers <mcpfan@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "fans MCP change notifications out to many subscriber streams")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL mcpfan dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)

set(CPACK_DEBIAN_MCPFAN_PACKAGE_NAME mcpfan)
set(CPACK_DEBIAN_MCPFAN_PACKAGE_SHLIBDEPS ON)  # libuv1, libssl3, libnats3.x, ... computed by dpkg-shlibdeps
set(CPACK_DEBIAN_MCPFAN_DESCRIPTION
    "fans MCP change notifications out to many subscriber streams\n The mcpfan server (MCP Streamable HTTP, stdio framing, POST /v1/publish)\n as a systemd service, with mcpfan-token to mint client tokens.")
set(CPACK_DEBIAN_MCPFAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_MCPFAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME mcpfan-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "mcpfan engine and server libraries for embedding\n Headers, static libraries mcpfan::engine and mcpfan::server, and the CMake\n package for find_package(mcpfan CONFIG REQUIRED).")
# What the static libraries and the public headers need at build time of an embedding host.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libuv1-dev, libssl-dev, libnats-dev, liburing-dev, libhttp-parser-dev, libsimdjson-dev, libconcurrentqueue-dev, pkg-config, cmake (>= 3.25)")
set(CPACK_COMPONENT_DEV_DESCRIPTION "headers, static libraries and the CMake package")
include(CPack)
