# Turns status/page.html into a C++ source holding it as kStatusPage (status/status.h):
#   cmake -DIN=page.html -DOUT=status_page.cc -P embed_page.cmake
# The page stays an HTML file to edit; the build regenerates the source when it changes.
file(READ "${IN}" text)
set(delim "mcpfan_page")  # at most 16 characters
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delim}\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from transports/src/status/page.html by embed_page.cmake: edit the page, not this.\n"
  "#include \"status/status.h\"\n\n"
  "namespace mcpfan::detail {\n\n"
  "const std::string_view kStatusPage = R\"${delim}(${text})${delim}\";\n\n"
  "}  // namespace mcpfan::detail\n")
file(RENAME "${OUT}.tmp" "${OUT}")
