# What package managers and users consume besides the library itself:
#   lib/cmake/ACP/        ACPConfig.cmake, ACPConfigVersion.cmake, ACPTargets.cmake
#                         (+ ACPFortranTargets.cmake from ACPFortran.cmake)
#   bin/acpcc, acpcxx, acpfc   compiler wrappers
#   share/modulefiles/acp/<version>.lua and <version>   Lmod and Tcl modulefiles
#   share/man/            man pages (ACPManPages.cmake)
# and the tests that install the whole tree and use it as a newcomer would
# (tests/install).
#
# Every installed file finds the prefix from its own location, so an
# installed tree may be moved (and `cmake --install --prefix` works).
# Include after acp.pc is configured and ACPFortran.cmake ran.

include(CMakePackageConfigHelpers)

foreach(dir CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_MANDIR)
  if(IS_ABSOLUTE "${${dir}}")
    message(FATAL_ERROR "${dir}=${${dir}} must be relative to the prefix: the installed tree is relocatable")
  endif()
endforeach()

# acp_relative_to_prefix(<var> <dir>) sets <var> to the path from
# <prefix>/<dir> back to <prefix> ("../.." for "lib/cmake/ACP").
function(acp_relative_to_prefix var dir)
  file(RELATIVE_PATH rel /prefix/${dir} /prefix)
  string(REGEX REPLACE "/$" "" rel "${rel}")
  set(${var} ${rel} PARENT_SCOPE)
endfunction()

# ---- CMake package --------------------------------------------------------

set(ACP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ACP)
acp_relative_to_prefix(ACP_CONFIG_TO_PREFIX ${ACP_CMAKE_DIR})
configure_package_config_file(cmake/ACPConfig.cmake.in ${CMAKE_BINARY_DIR}/cmake/ACPConfig.cmake
  INSTALL_DESTINATION ${ACP_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# 3.x programs build against any 3.y >= the version they ask for.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/ACPConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
configure_file(cmake/ACPTargets.cmake.in ${CMAKE_BINARY_DIR}/cmake/ACPTargets.cmake @ONLY)
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/ACPConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/ACPConfigVersion.cmake
  ${CMAKE_BINARY_DIR}/cmake/ACPTargets.cmake
  DESTINATION ${ACP_CMAKE_DIR})

# ---- compiler wrappers ------------------------------------------------------

acp_relative_to_prefix(WRAPPER_BIN_TO_PREFIX ${CMAKE_INSTALL_BINDIR})

# acp_wrapper(<name> <language> <env var> <default compiler> <what> <flags> <libs>)
function(acp_wrapper name language env default what flags libs)
  set(WRAPPER_NAME ${name})
  set(WRAPPER_LANGUAGE ${language})
  set(WRAPPER_ENV ${env})
  set(WRAPPER_DEFAULT ${default})
  set(WRAPPER_WHAT "${what}")
  set(WRAPPER_COMPILE_FLAGS "${flags}")
  set(WRAPPER_LIBS "${libs}")
  configure_file(${CMAKE_SOURCE_DIR}/packaging/wrappers/compiler-wrapper.sh.in
    ${CMAKE_BINARY_DIR}/wrappers/${name} @ONLY)
  install(PROGRAMS ${CMAKE_BINARY_DIR}/wrappers/${name} DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

set(acp_include_flag "-I\"$prefix/${CMAKE_INSTALL_INCLUDEDIR}\"")
acp_wrapper(acpcc C CC ${CMAKE_C_COMPILER} " of acp.h" "${acp_include_flag}" "-lacp")
# C++ is not a language of this build; the library's C compiler's sibling
# is the natural default.
if(CMAKE_CXX_COMPILER)
  set(acp_cxx_default ${CMAKE_CXX_COMPILER})
else()
  set(acp_cxx_default c++)
endif()
acp_wrapper(acpcxx C++ CXX ${acp_cxx_default} " of acp.h" "${acp_include_flag}" "-lacp")
if(ACP_HAVE_FORTRAN)
  acp_wrapper(acpfc Fortran FC ${CMAKE_Fortran_COMPILER} " of module acp (acp.mod)"
    "-I\"$prefix/${ACP_FORTRAN_MODDIR}\"" "-lacp_fortran -lacp")
endif()

# ---- modulefiles --------------------------------------------------------------

set(ACP_MODULEFILE_DIR ${CMAKE_INSTALL_DATADIR}/modulefiles)
# Components from the modulefile back to the prefix: share/modulefiles/acp/<file>.
string(REGEX MATCHALL "[^/]+" acp_components "${ACP_MODULEFILE_DIR}/acp/file")
list(LENGTH acp_components ACP_MODULEFILE_DEPTH)
set(ACP_MODULE_FORTRAN_WHATIS_LUA "")
set(ACP_MODULE_FORTRAN_WHATIS_TCL "")
set(ACP_MODULE_FORTRAN_HELP "")
if(ACP_HAVE_FORTRAN)
  set(acp_fc "${CMAKE_Fortran_COMPILER_ID} Fortran ${CMAKE_Fortran_COMPILER_VERSION}")
  set(ACP_MODULE_FORTRAN_WHATIS_LUA "whatis(\"Fortran: module acp for ${acp_fc}\")")
  set(ACP_MODULE_FORTRAN_WHATIS_TCL "module-whatis \"Fortran: module acp for ${acp_fc}\"")
  set(ACP_MODULE_FORTRAN_HELP "Fortran:         acpfc prog.f90 (module acp, readable by ${acp_fc} only)\n")
endif()
configure_file(packaging/modules/acp.lua.in
  ${CMAKE_BINARY_DIR}/modulefiles/acp/${PROJECT_VERSION}.lua @ONLY)
configure_file(packaging/modules/acp.tcl.in
  ${CMAKE_BINARY_DIR}/modulefiles/acp/${PROJECT_VERSION} @ONLY)
install(FILES
  ${CMAKE_BINARY_DIR}/modulefiles/acp/${PROJECT_VERSION}.lua
  ${CMAKE_BINARY_DIR}/modulefiles/acp/${PROJECT_VERSION}
  DESTINATION ${ACP_MODULEFILE_DIR}/acp)

# ---- man pages and the install tests ----------------------------------------

include(${CMAKE_CURRENT_LIST_DIR}/ACPManPages.cmake)
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/install/CMakeLists.txt)
  add_subdirectory(${CMAKE_SOURCE_DIR}/tests/install ${CMAKE_BINARY_DIR}/tests/install)
endif()
