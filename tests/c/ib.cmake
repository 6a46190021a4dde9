# Tests of the InfiniBand verbs transport (ib/), label "ib":
#
#   ib_go_unit         go test ./ib/ here: the "no device" errors, GID choice,
#                      key cache, wire formats (device tests skip themselves)
#   ib_no_verbs_link   libacp.so needs no libibverbs to load (it is dlopen'ed)
#   ib_rxe             everything over Soft-RoCE in a throwaway VM
#                      (tests/ib/run-rxe.sh): the Go device tests (conformance,
#                      lazy connections, stale keys, bounds, atomics on every
#                      path, a vanished peer, also of the C fast path's
#                      puts), the C tests at 2 and 4 ranks
#                      with ACP_TRANSPORTS=ib, and a frozen peer. Skipped when
#                      the VM cannot start here.
# e.g. ctest --test-dir build -L ib

add_executable(t_ib_peer_gone ${CMAKE_SOURCE_DIR}/tests/ib/t_ib_peer_gone.c)
target_include_directories(t_ib_peer_gone PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(t_ib_peer_gone PRIVATE ACP::acp)
target_compile_options(t_ib_peer_gone PRIVATE -Wall -Wextra)
set_target_properties(t_ib_peer_gone PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)

add_test(NAME ib_go_unit
  COMMAND ${ACP_GO_ENV} ${GO_EXECUTABLE} test -count=1 ./ib/
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(ib_go_unit PROPERTIES LABELS "ib;quick" TIMEOUT 300)

add_test(NAME ib_no_verbs_link
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/ib/check-no-verbs-link.sh ${ACP_LIBRARY})
set_tests_properties(ib_no_verbs_link PROPERTIES LABELS "ib;quick" TIMEOUT 60)

if(ACPRUN)
  # The VM run takes a few minutes; 77 means "could not start a VM here".
  # A guest that hangs at boot is stopped after 600 s and started once
  # more (run-rxe.sh), hence room for two runs.
  add_test(NAME ib_rxe
    COMMAND ${ACP_GO_ENV} GO=${GO_EXECUTABLE}
            sh ${CMAKE_SOURCE_DIR}/tests/ib/run-rxe.sh
            ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${ACPRUN} $<TARGET_FILE:t_ib_peer_gone>)
  set_tests_properties(ib_rxe PROPERTIES LABELS "ib" TIMEOUT 2100 SKIP_RETURN_CODE 77)
endif()
