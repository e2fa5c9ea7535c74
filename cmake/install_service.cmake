# Install-time half of the "service" component (cmake/package.cmake): the systemd unit and the
# config template. It runs inside cmake_install.cmake, so CMAKE_INSTALL_PREFIX is the prefix of
# this install (`--prefix P` included), not the one configured: GNUInstallDirs would have fixed
# /etc at configure time for a /usr build, and `cmake --install --prefix P` would still have
# written there.
#
#   prefix /usr (a package; CPack stages it under DESTDIR)   /etc/mcpfan, /lib/systemd/system
#   any other prefix P                                         P/etc/mcpfan, P/lib/systemd/system
#
# The unit names the programs and the config where this install puts them. A config that is
# already there and differs (an operator's edits) is kept; the template is not installed over it.
#
# Set by the install(CODE) that includes this file: MCPFAN_UNIT_TEMPLATE, MCPFAN_CONFIG_SOURCE,
# MCPFAN_STAGE_DIR (where the configured unit is written before it is installed), MCPFAN_BINDIR
# and MCPFAN_DOCDIR (relative to the prefix, from GNUInstallDirs).
string(REGEX REPLACE "/+$" "" _mcpfan_prefix "${CMAKE_INSTALL_PREFIX}")  # "/usr/" as "/usr"; "/" as ""
if(_mcpfan_prefix STREQUAL "/usr" OR _mcpfan_prefix STREQUAL "")
  set(_mcpfan_etc "/etc/mcpfan")
  set(_mcpfan_unit_dir "/lib/systemd/system")  # where Debian 12's systemd and dh_installsystemd put units
else()
  set(_mcpfan_etc "${_mcpfan_prefix}/etc/mcpfan")
  set(_mcpfan_unit_dir "${_mcpfan_prefix}/lib/systemd/system")
endif()

# The names mcpfan.service.in uses.
set(CMAKE_INSTALL_FULL_BINDIR "${_mcpfan_prefix}/${MCPFAN_BINDIR}")
set(CMAKE_INSTALL_FULL_DOCDIR "${_mcpfan_prefix}/${MCPFAN_DOCDIR}")
set(MCPFAN_CONFIG_DIR "${_mcpfan_etc}")
configure_file("${MCPFAN_UNIT_TEMPLATE}" "${MCPFAN_STAGE_DIR}/mcpfan.service" @ONLY)

# file(INSTALL) puts $ENV{DESTDIR} in front of an absolute DESTINATION itself (as CPack's
# staging relies on); a plain EXISTS does not.

file(INSTALL DESTINATION "${_mcpfan_unit_dir}" TYPE FILE FILES "${MCPFAN_STAGE_DIR}/mcpfan.service")

set(_mcpfan_config "$ENV{DESTDIR}${_mcpfan_etc}/mcpfan.toml")
set(_mcpfan_config_differs TRUE)
if(EXISTS "${_mcpfan_config}")
  file(SHA256 "${_mcpfan_config}" _mcpfan_have)
  file(SHA256 "${MCPFAN_CONFIG_SOURCE}" _mcpfan_want)
  if(_mcpfan_have STREQUAL _mcpfan_want)
    set(_mcpfan_config_differs FALSE)
  endif()
endif()
if(EXISTS "${_mcpfan_config}" AND _mcpfan_config_differs)
  message(STATUS "Kept: ${_mcpfan_config} (differs from the template; the template is ${MCPFAN_CONFIG_SOURCE})")
else()
  file(INSTALL DESTINATION "${_mcpfan_etc}" TYPE FILE FILES "${MCPFAN_CONFIG_SOURCE}")
endif()
