# The Fortran binding: module acp (fortran/acp.f90) and libacp_fortran.
#
# Most of the module is bind(C) interfaces straight into libacp; the few
# procedures Fortran needs of its own (acp_init with the program's command
# line, acp_abort with a Fortran string, the argument queries) live in
# libacp_fortran.so.3, which programs link before libacp.
#
# ACP_FORTRAN: AUTO (default: build it when a Fortran compiler is found),
# ON (a missing compiler is an error) or OFF.
#
# Sets for the rest of the build:
#   ACP_HAVE_FORTRAN      ON when the binding is built
#   ACP_FORTRAN_MODDIR    where acp.mod is installed, relative to the prefix:
#                         include/fortran/<compiler>-<major version> (a .mod
#                         file is read only by the compiler that wrote it)
#   ACP_PC_FORTRAN        the Fortran lines of acp.pc
#   target acp_fortran (alias ACP::acp_fortran), exported as ACPFortranTargets

set(ACP_FORTRAN AUTO CACHE STRING "Build the Fortran module: AUTO (when a Fortran compiler is found), ON or OFF")
set_property(CACHE ACP_FORTRAN PROPERTY STRINGS AUTO ON OFF)

set(ACP_HAVE_FORTRAN OFF)
if(ACP_FORTRAN STREQUAL "OFF")
  message(STATUS "Fortran module: not built (ACP_FORTRAN=OFF)")
endif()
set(ACP_FORTRAN_MODDIR "")
set(ACP_PC_FORTRAN "# Fortran: not built (ACP_FORTRAN=OFF, or no Fortran compiler when libacp was configured).")

if(NOT ACP_FORTRAN STREQUAL "OFF")
  include(CheckLanguage)
  check_language(Fortran)
  if(CMAKE_Fortran_COMPILER)
    enable_language(Fortran)
    set(ACP_HAVE_FORTRAN ON)
  elseif(ACP_FORTRAN STREQUAL "AUTO")
    message(STATUS "No Fortran compiler found: the Fortran module is not built "
                   "(install gfortran, or name the compiler in FC)")
  else()
    message(FATAL_ERROR "ACP_FORTRAN=${ACP_FORTRAN} asks for the Fortran module, but no Fortran compiler "
                        "was found: install gfortran (apt-get install gfortran), name the compiler in FC "
                        "or CMAKE_Fortran_COMPILER, or configure with -DACP_FORTRAN=OFF")
  endif()
endif()

if(ACP_HAVE_FORTRAN)
  string(REGEX MATCH "^[0-9]+" ACP_FORTRAN_COMPILER_MAJOR "${CMAKE_Fortran_COMPILER_VERSION}")
  if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU")
    set(ACP_FORTRAN_COMPILER_TAG gfortran-${ACP_FORTRAN_COMPILER_MAJOR})
  else()
    string(TOLOWER "${CMAKE_Fortran_COMPILER_ID}-${ACP_FORTRAN_COMPILER_MAJOR}" ACP_FORTRAN_COMPILER_TAG)
  endif()
  set(ACP_FORTRAN_MODDIR ${CMAKE_INSTALL_INCLUDEDIR}/fortran/${ACP_FORTRAN_COMPILER_TAG})
  set(ACP_FORTRAN_BUILD_MODDIR ${CMAKE_BINARY_DIR}/fortran/modules)

  add_library(acp_fortran SHARED ${CMAKE_SOURCE_DIR}/fortran/acp.f90)
  add_library(ACP::acp_fortran ALIAS acp_fortran)
  set_target_properties(acp_fortran PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${ACP_SOVERSION}
    LIBRARY_OUTPUT_DIRECTORY ${ACP_LIB_DIR}
    Fortran_MODULE_DIRECTORY ${ACP_FORTRAN_BUILD_MODDIR}
    # libacp.so.3 lies beside it.
    INSTALL_RPATH "$ORIGIN")
  target_compile_options(acp_fortran PRIVATE
    $<$<Fortran_COMPILER_ID:GNU>:-std=f2018 -Wall -Wextra -pedantic>)
  target_link_libraries(acp_fortran PUBLIC ACP::acp)
  target_include_directories(acp_fortran PUBLIC
    $<BUILD_INTERFACE:${ACP_FORTRAN_BUILD_MODDIR}>
    $<INSTALL_INTERFACE:${ACP_FORTRAN_MODDIR}>)

  install(TARGETS acp_fortran EXPORT ACPFortranTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${ACP_FORTRAN_BUILD_MODDIR}/acp.mod DESTINATION ${ACP_FORTRAN_MODDIR})
  install(EXPORT ACPFortranTargets NAMESPACE ACP::
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ACP)

  set(ACP_PC_FORTRAN "\
# Fortran (module acp, written by ${CMAKE_Fortran_COMPILER_ID} Fortran ${CMAKE_Fortran_COMPILER_VERSION};
# only that compiler can read it):
#   gfortran $(pkg-config --variable=fflags acp) prog.f90 $(pkg-config --variable=flibs acp)
fmoddir=\${prefix}/${ACP_FORTRAN_MODDIR}
fflags=-I\${fmoddir}
fcflags=\${fflags}
flibs=-L\${libdir} -lacp_fortran -lacp")

  if(EXISTS ${CMAKE_SOURCE_DIR}/tests/fortran/CMakeLists.txt)
    add_subdirectory(${CMAKE_SOURCE_DIR}/tests/fortran ${CMAKE_BINARY_DIR}/tests/fortran)
  endif()
endif()
