# acp_info (cmd/acp_info): describes libacp on this machine: version and
# build, transports, how a process would find its peers here, CPUs,
# settings, memory per table. Built like acprun and installed next to it.
set(ACP_INFO ${CMAKE_BINARY_DIR}/bin/acp_info)
acp_go_sources(ACP_INFO_SOURCES cmd/acp_info boot core internal udp shm ib)
add_custom_command(
  OUTPUT ${ACP_INFO}
  COMMAND ${ACP_GO_ENV} ${GO_EXECUTABLE} build -trimpath -buildvcs=false "-ldflags=-X main.version=${PROJECT_VERSION}" -o ${ACP_INFO} ./cmd/acp_info
  DEPENDS ${ACP_INFO_SOURCES}
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "Building acp_info"
  VERBATIM)
add_custom_target(acp_info ALL DEPENDS ${ACP_INFO})
install(PROGRAMS ${ACP_INFO} DESTINATION ${CMAKE_INSTALL_BINDIR})

# Every section, for a small and a very large job.
add_test(NAME acp_info_all COMMAND ${ACP_INFO} --procs 4,1000000)
set_tests_properties(acp_info_all PROPERTIES LABELS "quick" TIMEOUT 60)
