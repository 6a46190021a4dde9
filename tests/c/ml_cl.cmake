# Communication-library tests (channels, segmented buffers): included from
# CMakeLists.txt. Each runs with 1, 2, 3 and 4 processes, over UDP alone,
# and over UDP with injected loss, duplication and reordering at 4
# processes. Label: cl (e.g. ctest -L cl).

set(ACPCL_PROGRAMS t_ch_pairs t_ch_random t_ch_order t_ch_free t_ch_testch t_ch_badinput t_segbuf t_ch_starter t_ch_smemsize t_ch_abort)
foreach(prog ${ACPCL_PROGRAMS})
  add_executable(${prog} ${prog}.c acptest.h)
  target_link_libraries(${prog} PRIVATE ACP::acp Threads::Threads ${CMAKE_DL_LIBS})
  target_compile_options(${prog} PRIVATE -Wall -Wextra)
  set_target_properties(${prog} PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
endforeach()

set(ACPCL_FAULTS "ACP_TRANSPORTS=udp;ACP_UDP_FAULTS=loss=0.05,dup=0.05,reorder=0.05")

# acpcl_test(<program> [FAULT_ARGS <arg>...] <acp_c_test arguments>)
# registers the program with acp_c_test and once more at 4 processes over
# UDP with faults (FAULT_ARGS replace ARGS there, to keep that run short).
function(acpcl_test prog)
  cmake_parse_arguments(T "" "" "FAULT_ARGS;ARGS" ${ARGN})
  acp_c_test(${prog} ARGS ${T_ARGS} ${T_UNPARSED_ARGUMENTS} LABELS cl)
  if(NOT ACPRUN)
    return()
  endif()
  if(NOT T_FAULT_ARGS)
    set(T_FAULT_ARGS ${T_ARGS})
  endif()
  add_test(NAME ${prog}_faults_np4
    COMMAND ${ACPRUN} -np 4 --timeout 120 --acp-size-smem 4096 $<TARGET_FILE:${prog}> ${T_FAULT_ARGS})
  set_tests_properties(${prog}_faults_np4 PROPERTIES
    LABELS "c;cl;udp;np4" TIMEOUT 150 ENVIRONMENT "${ACPCL_FAULTS}")
endfunction()

acpcl_test(t_ch_pairs    SMEM 4096 NPS 1 2 3 4 UDP_NP 4 FAULT_ARGS -max 262144)
acpcl_test(t_ch_random   SMEM 4096 NPS 2 3 4 UDP_NP 4 FAULT_ARGS -rounds 8 -max 262144)
acpcl_test(t_ch_order    SMEM 4096 NPS 1 2 3 4 UDP_NP 4)
acpcl_test(t_ch_free     SMEM 4096 NPS 1 2 3 4 UDP_NP 4)
acpcl_test(t_ch_testch   SMEM 4096 NPS 1 2 3 4 UDP_NP 4 ARGS -r 100 -l 64)
acpcl_test(t_ch_badinput SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON ENV ACP_VERBOSE=1)
acpcl_test(t_segbuf      SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON ENV ACP_VERBOSE=1)

# A program that defines iacp_starter_memory_size_cl = 0: honoured when no
# setting says otherwise (without a launcher, and under acprun, whose
# 1024 bytes are only a default), overridden by --acp-size-smem-cl /
# -smemsize-cl. Too small a CL starter memory stops acp_init with a message
# naming the option.
add_test(NAME t_ch_starter_singleton COMMAND t_ch_starter)
set_tests_properties(t_ch_starter_singleton PROPERTIES
  LABELS "c;cl;singleton;quick" TIMEOUT 60
  ENVIRONMENT "ACP_VERBOSE=1;ACPT_EXPECT_CL=0"
  PASS_REGULAR_EXPRESSION "communication library is off"
  FAIL_REGULAR_EXPRESSION "FAIL")
if(ACPRUN)
  add_test(NAME t_ch_starter_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 $<TARGET_FILE:t_ch_starter>)
  set_tests_properties(t_ch_starter_np2 PROPERTIES
    LABELS "c;cl;np2;quick" TIMEOUT 80 ENVIRONMENT "ACPT_EXPECT_CL=0")
  add_test(NAME t_ch_starter_explicit_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 -smemsize-cl 4096 $<TARGET_FILE:t_ch_starter>)
  set_tests_properties(t_ch_starter_explicit_np2 PROPERTIES
    LABELS "c;cl;np2;quick" TIMEOUT 80 ENVIRONMENT "ACPT_EXPECT_CL=1")
  add_test(NAME t_ch_starter_too_small_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 -smemsize-cl 100 $<TARGET_FILE:t_ch_starter>)
  set_tests_properties(t_ch_starter_too_small_np2 PROPERTIES
    LABELS "c;cl;np2;quick" TIMEOUT 80 ENVIRONMENT "ACPT_EXPECT_CL=1"
    PASS_REGULAR_EXPRESSION "starter memory of 100 bytes.*--acp-size-smem-cl")
  add_test(NAME t_ch_starter_udp_np4
    COMMAND ${ACPRUN} -np 4 --timeout 50 $<TARGET_FILE:t_ch_starter>)
  set_tests_properties(t_ch_starter_udp_np4 PROPERTIES
    LABELS "c;cl;udp;np4" TIMEOUT 80 ENVIRONMENT "ACP_TRANSPORTS=udp;ACPT_EXPECT_CL=0")
  add_test(NAME t_ch_starter_explicit_udp_np4
    COMMAND ${ACPRUN} -np 4 --timeout 50 -smemsize-cl 4096 $<TARGET_FILE:t_ch_starter>)
  set_tests_properties(t_ch_starter_explicit_udp_np4 PROPERTIES
    LABELS "c;cl;udp;np4" TIMEOUT 80 ENVIRONMENT "ACP_TRANSPORTS=udp;ACPT_EXPECT_CL=1")
endif()

# A program that sizes the CL starter memory itself
# (iacp_starter_memory_size_cl = 8192): honoured when no setting says
# otherwise (without a launcher, and under acprun), overridden by
# ACP_SIZE_SMEM_CL and by --acp-size-smem-cl on the program's own command
# line. ACPT_CL_SIZE is the size a run expects.
acpcl_test(t_ch_smemsize SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON)
if(ACPRUN)
  add_test(NAME t_ch_smemsize_env_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 $<TARGET_FILE:t_ch_smemsize>)
  set_tests_properties(t_ch_smemsize_env_np2 PROPERTIES
    LABELS "c;cl;np2;quick" TIMEOUT 80 ENVIRONMENT "ACP_SIZE_SMEM_CL=16384;ACPT_CL_SIZE=16384")
  add_test(NAME t_ch_smemsize_env_udp_np4
    COMMAND ${ACPRUN} -np 4 --timeout 50 $<TARGET_FILE:t_ch_smemsize>)
  set_tests_properties(t_ch_smemsize_env_udp_np4 PROPERTIES
    LABELS "c;cl;udp;np4" TIMEOUT 80 ENVIRONMENT "ACP_TRANSPORTS=udp;ACP_SIZE_SMEM_CL=16384;ACPT_CL_SIZE=16384")
  add_test(NAME t_ch_smemsize_argv_np3
    COMMAND ${ACPRUN} -np 3 --timeout 50 $<TARGET_FILE:t_ch_smemsize> --acp-size-smem-cl 12288)
  set_tests_properties(t_ch_smemsize_argv_np3 PROPERTIES
    LABELS "c;cl;np3" TIMEOUT 80 ENVIRONMENT "ACPT_CL_SIZE=12288")
endif()

# iacp_abort_cl ends the process like acp_abort.
add_test(NAME t_ch_abort_singleton COMMAND t_ch_abort)
set_tests_properties(t_ch_abort_singleton PROPERTIES
  LABELS "c;cl;singleton;abort;quick" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "acp_abort: iacp_abort_cl")

# A short run of the channel benchmarks, so that a broken one is noticed
# (verification failures make acpbench exit non-zero).
if(ACPRUN AND EXISTS ${CMAKE_SOURCE_DIR}/bench/CMakeLists.txt)
  foreach(mode chpingpong chbw)
    add_test(NAME acpbench_${mode}_np2
      COMMAND ${ACPRUN} -np 2 --timeout 120 $<TARGET_FILE:acpbench> ${mode} -max 1048576 -rounds 1)
    set_tests_properties(acpbench_${mode}_np2 PROPERTIES LABELS "bench;cl;np2" TIMEOUT 150)
  endforeach()
endif()

# With a CL starter memory large enough for the rings, a sender maps its
# receiver's ring and the C fast path (capi/chfast.c) sends, receives and
# releases slots in place; the runs above keep the rings in registered
# slabs (the 1024-byte default), where Go does everything.
if(ACPRUN)
  foreach(prog t_ch_pairs t_ch_random t_ch_order t_ch_free t_ch_testch t_ch_badinput)
    foreach(np 2 4)
      add_test(NAME ${prog}_mapped_np${np}
        COMMAND ${ACPRUN} -np ${np} --timeout 120 --acp-size-smem 4096 --acp-size-smem-cl 4194304 $<TARGET_FILE:${prog}>)
      set_tests_properties(${prog}_mapped_np${np} PROPERTIES LABELS "c;cl;np${np}" TIMEOUT 150)
    endforeach()
  endforeach()
endif()

# Two "hosts" (acp_hosts_test): channels within a host and across, with
# the rings in registered slabs and, for t_ch_pairs, mapped within each
# host.
foreach(prog t_ch_pairs t_ch_random t_segbuf)
  acp_hosts_test(${prog} SMEM 4096 LABELS cl)
endforeach()
acp_hosts_test(t_ch_pairs NAME t_ch_pairs_mapped SMEM 4096 ARGS --acp-size-smem-cl 4194304 LABELS cl)

# Channels from 4 threads of every rank at once (t_thr_ch), with the rings
# in registered slabs (Go) and, with a large CL starter memory, mapped
# (the C fast path).
add_executable(t_thr_ch t_thr_ch.c acptest.h)
target_link_libraries(t_thr_ch PRIVATE ACP::acp Threads::Threads)
target_compile_options(t_thr_ch PRIVATE -Wall -Wextra)
set_target_properties(t_thr_ch PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
acp_c_test(t_thr_ch SMEM 4096 NPS 2 4 UDP_NP 4 TIMEOUT 150 LABELS cl threads)
if(ACPRUN)
  foreach(np 2 4)
    add_test(NAME t_thr_ch_mapped_np${np}
      COMMAND ${ACPRUN} -np ${np} --timeout 150 --acp-size-smem 4096 --acp-size-smem-cl 4194304 $<TARGET_FILE:t_thr_ch>)
    set_tests_properties(t_thr_ch_mapped_np${np} PROPERTIES LABELS "c;cl;threads;np${np}" TIMEOUT 180)
  endforeach()
endif()
