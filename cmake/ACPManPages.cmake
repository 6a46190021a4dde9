# Man pages (man/, written in man(7) directly: no converter at build time).
# Installs every page under share/man/man<section>, plus one-line ".so"
# pages so that each function has its own name: `man acp_cas8` shows
# acp_atomic(3). Registers the lint test man_pages_lint.

set(ACP_MAN_PAGES
  acp.7
  acprun.1 acp_info.1 acpcc.1
  acp_init.3 acp_register_memory.3 acp_copy.3 acp_atomic.3 acp_complete.3 acp_fortran.3
  acp_segbuf.3 acp_ch.3 acp_ws.3 acp_malloc.3 acp_vector.3 acp_deque.3 acp_list.3 acp_set.3)

# Each name in a page's NAME section other than the page's own gets a
# link: the NAME line is the one list of what a page documents, and
# whatis reads the same line.
set(ACP_MAN_LINK_FILES)
foreach(page ${ACP_MAN_PAGES})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/man/${page})
  file(READ ${CMAKE_SOURCE_DIR}/man/${page} text)
  if(NOT text MATCHES "\n\\.SH NAME\n([^\n]*) \\\\- ")
    message(FATAL_ERROR "man/${page}: no \"name, name \\- what\" line after .SH NAME")
  endif()
  string(REPLACE ", " ";" names "${CMAKE_MATCH_1}")
  string(REGEX REPLACE "^(.*)\\.([0-9])$" "\\1;\\2" page_name_section ${page})
  list(GET page_name_section 0 page_name)
  list(GET page_name_section 1 section)
  list(REMOVE_ITEM names ${page_name})
  foreach(name ${names})
    set(link ${CMAKE_BINARY_DIR}/man/man${section}/${name}.${section})
    file(CONFIGURE OUTPUT ${link} CONTENT ".so man${section}/${page}\n")
    list(APPEND ACP_MAN_LINK_FILES ${link})
  endforeach()
endforeach()

foreach(page ${ACP_MAN_PAGES})
  string(REGEX REPLACE "^.*\\.([0-9])$" "\\1" section ${page})
  install(FILES ${CMAKE_SOURCE_DIR}/man/${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
foreach(link ${ACP_MAN_LINK_FILES})
  get_filename_component(dir ${link} DIRECTORY)
  get_filename_component(section_dir ${dir} NAME)
  install(FILES ${link} DESTINATION ${CMAKE_INSTALL_MANDIR}/${section_dir})
endforeach()

# Every page must pass mandoc's lint and groff's warnings without a
# message; the script says which tool it used.
list(TRANSFORM ACP_MAN_PAGES PREPEND ${CMAKE_SOURCE_DIR}/man/ OUTPUT_VARIABLE acp_man_sources)
add_test(NAME man_pages_lint
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/install/lint-man-pages.sh ${acp_man_sources})
set_tests_properties(man_pages_lint PROPERTIES LABELS "packaging;quick" TIMEOUT 60 SKIP_RETURN_CODE 77)
