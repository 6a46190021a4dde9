# Man pages (man/, written in man(7) directly: no converter at build time).
# Installs every page under share/man/man<section>, plus one-line ".so"
# pages so that each function has its own name: `man acp_cas8` shows
# acp_atomic(3). Registers the lint test man_pages_lint.

# acp_man_links(<page> <name>...): man/<page> also answers to each <name>
# (in the same section).
set(ACP_MAN_PAGES)
set(ACP_MAN_LINK_FILES)
function(acp_man_links page)
  string(REGEX REPLACE "^.*\\.([0-9])$" "\\1" section ${page})
  foreach(name ${ARGN})
    set(link ${CMAKE_BINARY_DIR}/man/man${section}/${name}.${section})
    file(CONFIGURE OUTPUT ${link} CONTENT ".so man${section}/${page}\n")
    list(APPEND ACP_MAN_LINK_FILES ${link})
  endforeach()
  set(ACP_MAN_LINK_FILES ${ACP_MAN_LINK_FILES} PARENT_SCOPE)
endfunction()

set(ACP_MAN_PAGES
  acp.7
  acprun.1 acp_info.1 acpcc.1
  acp_init.3 acp_register_memory.3 acp_copy.3 acp_atomic.3 acp_complete.3 acp_fortran.3)
acp_man_links(acpcc.1 acpcxx acpfc)
acp_man_links(acp_init.3 acp_finalize acp_reset acp_abort acp_sync acp_rank acp_procs)
acp_man_links(acp_register_memory.3 acp_unregister_memory acp_query_starter_ga acp_query_ga
  acp_query_address acp_query_rank acp_query_color acp_colors)
acp_man_links(acp_atomic.3 acp_cas4 acp_cas8 acp_swap4 acp_swap8 acp_add4 acp_add8
  acp_xor4 acp_xor8 acp_or4 acp_or8 acp_and4 acp_and8)
acp_man_links(acp_complete.3 acp_inquire)

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
