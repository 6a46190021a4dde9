# Data-library tests (acp_malloc/acp_free, containers, workspace): included
# from CMakeLists.txt. Each runs with 1, 2, 3 and 4 processes; the
# container tests also over UDP alone, and over UDP with injected loss,
# duplication and reordering. Label: dl.

set(ACPDL_PROGRAMS t_dl_malloc t_dl_vector t_dl_deque t_dl_list t_dl_hashed t_dl_hashed_ops t_dl_macros t_dl_ws t_dl_nodl t_dl_smemsize)
foreach(prog ${ACPDL_PROGRAMS})
  if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${prog}.c)
    continue()
  endif()
  add_executable(${prog} ${prog}.c acptest.h dltest.h)
  target_link_libraries(${prog} PRIVATE ACP::acp Threads::Threads)
  target_compile_options(${prog} PRIVATE -Wall -Wextra)
  set_target_properties(${prog} PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
endforeach()

# The heap these tests lay out (they check its exact size).
set(ACPDL_HEAP ACP_SIZE_SMEM_DL=1048576)
set(ACPDL_FAULTS "ACP_UDP_FAULTS=loss=0.05,dup=0.05,reorder=0.05")

macro(acpdl_test prog)
  if(TARGET ${prog})
    acp_c_test(${prog} ${ARGN})
  endif()
endmacro()

acpdl_test(t_dl_malloc SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON TIMEOUT 150
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl)
acpdl_test(t_dl_ws     SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl)
foreach(prog t_dl_vector t_dl_deque t_dl_list t_dl_hashed t_dl_hashed_ops t_dl_macros)
  if(NOT TARGET ${prog})
    continue()
  endif()
  acp_c_test(${prog} SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON
             ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl)
  if(ACPRUN)
    add_test(NAME ${prog}_faults_np4
      COMMAND ${ACPRUN} -np 4 --timeout 150 --acp-size-smem 4096 $<TARGET_FILE:${prog}>)
    set_tests_properties(${prog}_faults_np4 PROPERTIES
      LABELS "c;dl;udp;np4" TIMEOUT 180
      ENVIRONMENT "ACP_TRANSPORTS=udp;${ACPDL_FAULTS};${ACPDL_HEAP}")
  endif()
endforeach()

# Two "hosts" (acp_hosts_test): remote acp_malloc and containers spread
# over ranks of the same host and of the other.
foreach(prog t_dl_malloc t_dl_vector t_dl_list)
  acp_hosts_test(${prog} SMEM 4096 ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl)
endforeach()

# A program that sizes its heap itself (iacp_starter_memory_size_dl =
# 65536): honoured when no setting says otherwise (without a launcher, and
# under acprun, whose 1024 bytes are only a default), overridden by
# --acp-size-smem-dl given to acprun or on the program's own command line,
# and by ACP_SIZE_SMEM_DL. ACPT_DL_SIZE is the size a run expects.
acpdl_test(t_dl_smemsize SMEM 4096 NPS 1 2 3 4 UDP_NP 4 SINGLETON ENV ACP_VERBOSE=1 LABELS dl)
if(TARGET t_dl_smemsize)
add_test(NAME t_dl_smemsize_argv_singleton COMMAND t_dl_smemsize --acp-size-smem-dl 300000)
set_tests_properties(t_dl_smemsize_argv_singleton PROPERTIES
  LABELS "c;dl;singleton;quick" TIMEOUT 60 ENVIRONMENT "ACP_VERBOSE=1;ACPT_DL_SIZE=300000")
if(ACPRUN)
  add_test(NAME t_dl_smemsize_option_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 --acp-size-smem-dl 200000 $<TARGET_FILE:t_dl_smemsize>)
  set_tests_properties(t_dl_smemsize_option_np2 PROPERTIES
    LABELS "c;dl;np2;quick" TIMEOUT 80 ENVIRONMENT "ACP_VERBOSE=1;ACPT_DL_SIZE=200000")
  add_test(NAME t_dl_smemsize_argv_np3
    COMMAND ${ACPRUN} -np 3 --timeout 50 $<TARGET_FILE:t_dl_smemsize> --acp-size-smem-dl 300000)
  set_tests_properties(t_dl_smemsize_argv_np3 PROPERTIES
    LABELS "c;dl;np3" TIMEOUT 80 ENVIRONMENT "ACP_VERBOSE=1;ACPT_DL_SIZE=300000")
  add_test(NAME t_dl_smemsize_env_udp_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 $<TARGET_FILE:t_dl_smemsize>)
  set_tests_properties(t_dl_smemsize_env_udp_np2 PROPERTIES
    LABELS "c;dl;udp;np2" TIMEOUT 80
    ENVIRONMENT "ACP_TRANSPORTS=udp;ACP_VERBOSE=1;ACP_SIZE_SMEM_DL=100000;ACPT_DL_SIZE=100000")
endif()
endif()

# A program that defines iacp_starter_memory_size_dl = 0, as programs
# written for the original do to go without the data library: honoured
# when no setting says otherwise (the singleton run, the udp run without a
# setting), overridden by ACP_SIZE_SMEM_DL (the other acprun runs set it).
if(TARGET t_dl_nodl)
add_test(NAME t_dl_nodl_singleton COMMAND t_dl_nodl)
set_tests_properties(t_dl_nodl_singleton PROPERTIES
  LABELS "c;dl;singleton;quick" TIMEOUT 60 ENVIRONMENT "ACP_VERBOSE=1;ACPT_EXPECT_HEAP=0")
if(ACPRUN)
  add_test(NAME t_dl_nodl_np2
    COMMAND ${ACPRUN} -np 2 --timeout 50 $<TARGET_FILE:t_dl_nodl>)
  set_tests_properties(t_dl_nodl_np2 PROPERTIES
    LABELS "c;dl;np2;quick" TIMEOUT 80 ENVIRONMENT "ACP_VERBOSE=1;ACPT_EXPECT_HEAP=1;${ACPDL_HEAP}")
  # Over UDP: with the heap's size set, and with none (the program's 0
  # wins over acprun's default).
  add_test(NAME t_dl_nodl_udp_np4
    COMMAND ${ACPRUN} -np 4 --timeout 50 $<TARGET_FILE:t_dl_nodl>)
  set_tests_properties(t_dl_nodl_udp_np4 PROPERTIES
    LABELS "c;dl;udp;np4" TIMEOUT 80
    ENVIRONMENT "ACP_TRANSPORTS=udp;ACP_VERBOSE=1;ACPT_EXPECT_HEAP=1;${ACPDL_HEAP}")
  add_test(NAME t_dl_nodl_program_udp_np4
    COMMAND ${ACPRUN} -np 4 --timeout 50 $<TARGET_FILE:t_dl_nodl>)
  set_tests_properties(t_dl_nodl_program_udp_np4 PROPERTIES
    LABELS "c;dl;udp;np4" TIMEOUT 80 ENVIRONMENT "ACP_TRANSPORTS=udp;ACP_VERBOSE=1;ACPT_EXPECT_HEAP=0")
endif()
endif()

# Sizes no memory holds or that wrap (t_dl_badinput); failures of other
# operations, also another thread's, during data-library calls
# (t_dl_otherfail: no ACP_VERBOSE, each failed copy would print a line).
foreach(prog t_dl_badinput t_dl_otherfail)
  add_executable(${prog} ${prog}.c acptest.h dltest.h)
  target_link_libraries(${prog} PRIVATE ACP::acp Threads::Threads)
  target_compile_options(${prog} PRIVATE -Wall -Wextra)
  set_target_properties(${prog} PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
endforeach()
acp_c_test(t_dl_badinput SMEM 4096 NPS 1 2 3 UDP_NP 2 SINGLETON
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl)
acp_c_test(t_dl_otherfail SMEM 4096 NPS 2 3 UDP_NP 2 SINGLETON
           ENV ${ACPDL_HEAP} LABELS dl)
# t_dl_nodl under acprun without a heap: the workspace across ranks.
if(TARGET t_dl_nodl AND ACPRUN)
  add_test(NAME t_dl_nodl_np3_noheap
    COMMAND ${ACPRUN} -np 3 --timeout 50 $<TARGET_FILE:t_dl_nodl>)
  set_tests_properties(t_dl_nodl_np3_noheap PROPERTIES
    LABELS "c;dl;np3" TIMEOUT 80 ENVIRONMENT "ACP_VERBOSE=1;ACPT_EXPECT_HEAP=0")
endif()

# Every function of acp.h with adversarial arguments (t_garbage): error
# values, canaries untouched, containers, channels and the workspace made
# before still intact. Over one, two and three processes and UDP.
add_executable(t_garbage t_garbage.c acptest.h dltest.h)
target_link_libraries(t_garbage PRIVATE ACP::acp Threads::Threads)
target_compile_options(t_garbage PRIVATE -Wall -Wextra)
set_target_properties(t_garbage PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
acp_c_test(t_garbage SMEM 4096 NPS 1 2 3 UDP_NP 2 SINGLETON TIMEOUT 60
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl)

# The data library from 4 threads of every rank at once (t_thr_dl): each
# thread its own containers and blocks, then one set, multiset and map
# shared by every thread of every rank.
add_executable(t_thr_dl t_thr_dl.c acptest.h)
target_link_libraries(t_thr_dl PRIVATE ACP::acp Threads::Threads)
target_compile_options(t_thr_dl PRIVATE -Wall -Wextra)
set_target_properties(t_thr_dl PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
acp_c_test(t_thr_dl SMEM 4096 NPS 1 2 4 UDP_NP 4 SINGLETON TIMEOUT 150
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl threads)

# Handles used by some threads while another thread of the rank destroys
# or frees them (t_thr_uwd): workspaces, containers, channels and
# segmented buffers; every call succeeds or fails with its documented
# value, none crashes or hangs.
add_executable(t_thr_uwd t_thr_uwd.c acptest.h)
target_link_libraries(t_thr_uwd PRIVATE ACP::acp Threads::Threads)
target_compile_options(t_thr_uwd PRIVATE -Wall -Wextra)
set_target_properties(t_thr_uwd PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
acp_c_test(t_thr_uwd SMEM 4096 NPS 2 UDP_NP 2 SINGLETON TIMEOUT 150
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl cl threads)
# The same with the channels' C fast path (rings mapped by the sender).
if(ACPRUN)
  add_test(NAME t_thr_uwd_mapped_np2
    COMMAND ${ACPRUN} -np 2 --timeout 150 --acp-size-smem 4096 --acp-size-smem-cl 4194304 $<TARGET_FILE:t_thr_uwd>)
  set_tests_properties(t_thr_uwd_mapped_np2 PROPERTIES LABELS "c;dl;cl;threads;np2" TIMEOUT 180
    ENVIRONMENT "${ACPDL_HEAP};ACP_VERBOSE=1")
endif()

# 32 threads in the data library at once, then as many registrations
# usable as before but for a few kept scratch buffers (t_thr_scratch).
add_executable(t_thr_scratch t_thr_scratch.c acptest.h)
target_link_libraries(t_thr_scratch PRIVATE ACP::acp Threads::Threads)
target_compile_options(t_thr_scratch PRIVATE -Wall -Wextra)
set_target_properties(t_thr_scratch PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
acp_c_test(t_thr_scratch SMEM 4096 NPS 2 UDP_NP 2 SINGLETON TIMEOUT 120
           ENV ${ACPDL_HEAP} LABELS dl threads)

# acp_sort_list and acp_merge_list while other threads of the rank push
# onto the same lists, with a comparator that calls the library
# (t_thr_lsort): no element lost or repeated, no deadlock.
add_executable(t_thr_lsort t_thr_lsort.c acptest.h)
target_link_libraries(t_thr_lsort PRIVATE ACP::acp Threads::Threads)
target_compile_options(t_thr_lsort PRIVATE -Wall -Wextra)
set_target_properties(t_thr_lsort PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
acp_c_test(t_thr_lsort SMEM 4096 NPS 2 UDP_NP 2 SINGLETON TIMEOUT 120
           ENV ${ACPDL_HEAP} ACP_VERBOSE=1 LABELS dl threads)
