# Install components of the mcpfan program, and the Debian packages built from them (cpack -G DEB;
# packaging/build-deb.sh). cmake/export.cmake adds the libraries, headers and CMake package
# (component "dev").
#
#   component    default install   what                                        in the .deb
#   runtime      yes               bin/mcpfan, bin/mcpfan-token, their man     mcpfan
#                                  pages, share/doc/mcpfan/README.md
#   license      yes               share/doc/mcpfan/LICENSE                    (none: copyright)
#   dev          yes               headers, static libraries, CMake package    mcpfan-dev
#   service      no                the systemd unit and the config template    mcpfan
#   deb_doc      no                Debian copyright and changelog.Debian.gz    mcpfan
#   deb_doc_dev  no                the same for mcpfan-dev                     mcpfan-dev
#
# `cmake --install BUILD --prefix P` writes below P only: the rules that name /etc and
# /lib/systemd/system are in "service", which installs only when asked for by name
# (`--component service`, as CPack does), and even then decides its directories at install
# time from the prefix in force (cmake/install_service.cmake): the system directories for
# /usr, P/etc and P/lib/systemd/system for any other P.
include(GNUInstallDirs)

install(TARGETS mcpfan mcpfan-token RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# The unit's Documentation= names it.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT license)

# ---- man pages: help2man from the programs' own --help and --version ----
# Built with everything else when help2man is installed (the test dependencies have it; a
# server-only machine need not). gzip -9n: no name or time stamp in the header, so the same
# page compresses to the same bytes (Debian policy 12.1).
find_program(MCPFAN_HELP2MAN help2man)
if(MCPFAN_HELP2MAN)
  set(_man_dir "${PROJECT_BINARY_DIR}/packaging/man")
  set(_man_pages)
  foreach(_prog IN ITEMS mcpfan mcpfan-token)
    if(_prog STREQUAL "mcpfan")
      set(_name "fan MCP change notifications out to many subscriber streams")
    else()
      set(_name "mint a client JWT that mcpfan accepts")
    endif()
    # Run by name from its own directory on PATH, so the page shows "mcpfan", not a build path.
    add_custom_command(OUTPUT "${_man_dir}/${_prog}.1.gz"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${_man_dir}"
      COMMAND ${CMAKE_COMMAND} -E env "PATH=$<TARGET_FILE_DIR:${_prog}>:$ENV{PATH}"
              "${MCPFAN_HELP2MAN}" --no-info --section=1 "--name=${_name}" --output=${_man_dir}/${_prog}.1 ${_prog}
      COMMAND gzip -9nf "${_man_dir}/${_prog}.1"
      DEPENDS ${_prog}
      COMMENT "Man page ${_prog}.1 (help2man)"
      VERBATIM)
    list(APPEND _man_pages "${_man_dir}/${_prog}.1.gz")
  endforeach()
  add_custom_target(mcpfan_man ALL DEPENDS ${_man_pages})
  install(FILES ${_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)
else()
  message(STATUS "help2man not found: no man pages (the Debian package needs them: apt-get install help2man)")
endif()

# ---- service: the unit and the config, placed at install time ----
install(CODE "
  set(MCPFAN_UNIT_TEMPLATE \"${PROJECT_SOURCE_DIR}/packaging/mcpfan.service.in\")
  set(MCPFAN_CONFIG_SOURCE \"${PROJECT_SOURCE_DIR}/packaging/mcpfan.toml\")
  set(MCPFAN_STAGE_DIR \"${PROJECT_BINARY_DIR}/packaging/service\")
  set(MCPFAN_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(MCPFAN_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  include(\"${CMAKE_CURRENT_LIST_DIR}/install_service.cmake\")
" COMPONENT service EXCLUDE_FROM_ALL)

# ---- Debian metadata: copyright (DEP-5) and changelog.Debian.gz in each package's doc dir ----
set(MCPFAN_DEB_RELEASE 1)  # the Debian revision: -1 of each upstream version
set(MCPFAN_DEB_VERSION "${PROJECT_VERSION}-${MCPFAN_DEB_RELEASE}")
set(MCPFAN_MAINTAINER "mcpfan maintainers <maintainers@mcpfan.dev>")
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in ${PROJECT_BINARY_DIR}/packaging/debian/changelog
               @ONLY)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/packaging/debian/changelog.Debian.gz
  COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/packaging/debian/changelog
          > ${PROJECT_BINARY_DIR}/packaging/debian/changelog.Debian.gz
  DEPENDS ${PROJECT_BINARY_DIR}/packaging/debian/changelog
  COMMENT "changelog.Debian.gz")
add_custom_target(mcpfan_deb_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/packaging/debian/changelog.Debian.gz)
foreach(_pkg IN ITEMS mcpfan mcpfan-dev)
  if(_pkg STREQUAL "mcpfan")
    set(_component deb_doc)
  else()
    set(_component deb_doc_dev)
  endif()
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
                ${PROJECT_BINARY_DIR}/packaging/debian/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg} COMPONENT ${_component} EXCLUDE_FROM_ALL)
endforeach()

# ---- CPack: two .deb, each a group of components ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mcpfan)
set(CPACK_PACKAGE_VENDOR "mcpfan")
set(CPACK_PACKAGE_CONTACT "${MCPFAN_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put it in front of each package's own
# description, and mcpfan-dev would show mcpfan's synopsis.
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
# Directories CPack makes itself (usr/, usr/share/, ...) get 0755 whatever the umask is.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_COMPONENTS_ALL runtime service deb_doc dev deb_doc_dev)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
foreach(_c IN ITEMS runtime service deb_doc)
  string(TOUPPER ${_c} _C)
  set(CPACK_COMPONENT_${_C}_GROUP server)
endforeach()
set(CPACK_COMPONENT_DEV_GROUP devel)
set(CPACK_COMPONENT_DEB_DOC_DEV_GROUP devel)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${MCPFAN_DEB_RELEASE})

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME mcpfan)
set(CPACK_DEBIAN_SERVER_PACKAGE_SHLIBDEPS ON)  # libuv1, libssl3, libnats3.x, ... computed by dpkg-shlibdeps
# Merged with the computed ones. postinst makes the system user with adduser.
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "adduser")
string(CONCAT CPACK_DEBIAN_SERVER_DESCRIPTION
    "fan MCP change notifications out to many subscriber streams\n"
    "The mcpfan server (MCP Streamable HTTP, stdio framing, POST /v1/publish) as a\n"
    "hardened systemd service reading /etc/mcpfan/mcpfan.toml, with mcpfan-token to\n"
    "mint client tokens.")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEVEL_PACKAGE_NAME mcpfan-dev)
set(CPACK_DEBIAN_DEVEL_PACKAGE_SECTION libdevel)
string(CONCAT CPACK_DEBIAN_DEVEL_DESCRIPTION
    "C++20 libraries to embed an MCP notification fan-out hub\n"
    "Headers and static libraries of the mcpfan engine (mcpfan::engine: hub,\n"
    "shards, payloads, tenants) and network server (mcpfan::server), with the CMake\n"
    "package for find_package(mcpfan CONFIG REQUIRED).")
# What the static libraries and the public headers need at build time of an embedding host
# (libnats-dev only when the backplane is built in).
set(_mcpfan_dev_nats "")
if(MCPFAN_WITH_NATS)
  set(_mcpfan_dev_nats "libnats-dev, ")
endif()
string(CONCAT CPACK_DEBIAN_DEVEL_PACKAGE_DEPENDS
    "libuv1-dev, libssl-dev, ${_mcpfan_dev_nats}liburing-dev, libnghttp2-dev, libhttp-parser-dev, libsimdjson-dev, "
    "libconcurrentqueue-dev, pkg-config, cmake (>= 3.25)")
include(CPack)
