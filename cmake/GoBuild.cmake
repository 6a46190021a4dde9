# Helpers for building Go packages of this module from CMake.

find_program(GO_EXECUTABLE go PATHS /usr/local/go/bin DOC "Go toolchain (1.26 or later)")
if(NOT GO_EXECUTABLE)
  message(FATAL_ERROR "go not found in PATH or /usr/local/go/bin; set GO_EXECUTABLE")
endif()

# The environment of every go invocation: cgo on, with the C compiler CMake
# chose, so the library and the C tests are built by the same compiler.
set(ACP_GO_ENV ${CMAKE_COMMAND} -E env CGO_ENABLED=1 CC=${CMAKE_C_COMPILER})
# go refuses to run without a cache directory; a build without HOME (some
# CI and packaging sandboxes) keeps it in the build tree.
if("$ENV{HOME}" STREQUAL "" AND "$ENV{GOCACHE}" STREQUAL "" AND "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  list(APPEND ACP_GO_ENV GOCACHE=${CMAKE_BINARY_DIR}/go-cache)
endif()

# acp_go_sources(<var> <dir>...) sets <var> to every file under the given
# source directories that can change a Go build (.go .c .h .s .map, plus go.mod
# and go.sum). The glob is re-checked at build time, so adding a file (or a
# whole package directory) re-runs the configuration.
function(acp_go_sources var)
  set(patterns)
  foreach(dir IN LISTS ARGN)
    foreach(ext go c h s map)
      list(APPEND patterns ${CMAKE_SOURCE_DIR}/${dir}/*.${ext})
    endforeach()
  endforeach()
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${patterns})
  list(FILTER files EXCLUDE REGEX "/testdata/") # go ignores testdata too
  list(APPEND files ${CMAKE_SOURCE_DIR}/go.mod ${CMAKE_SOURCE_DIR}/go.sum)
  set(${var} ${files} PARENT_SCOPE)
endfunction()
