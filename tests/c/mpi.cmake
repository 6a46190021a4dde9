# The C tests under real MPI launchers, and programs that use MPI and ACP
# together (t_mpi_*.c).
#
# Open MPI's mpirun serves PMIx and MPICH's Hydra mpiexec serves PMI-1; the
# unchanged test programs find their peers through them. Debian installs
# both MPIs side by side, so the launchers are found by their explicit names
# (mpirun.openmpi, mpiexec.mpich) and each MPI+ACP program is built once per
# MPI from its pkg-config file (ompi-c, mpich). A missing MPI skips its
# tests with a message.
#
# Labels: mpi, openmpi or mpich, np2/np4, env (the launcher-environment
# rung: the launcher's service hidden, ACP_BOOTSTRAP_ADDR set), abort.
# e.g. ctest --test-dir build -L mpi, or -L openmpi.

find_package(PkgConfig QUIET)
find_program(ACP_MPIRUN_OPENMPI mpirun.openmpi DOC "Open MPI's mpirun (Debian: openmpi-bin)")
find_program(ACP_MPIEXEC_MPICH mpiexec.mpich DOC "MPICH's Hydra mpiexec (Debian: mpich)")
if(PKG_CONFIG_FOUND)
  pkg_check_modules(ACP_OMPI QUIET IMPORTED_TARGET ompi-c)
  pkg_check_modules(ACP_MPICH QUIET IMPORTED_TARGET mpich)
endif()

# acp_mpi_test(<name> <openmpi|mpich> <np> COMMAND <program> <args>...
#              [LAUNCHER_ARGS <arg>...] [ENV <var=value>...] [LABELS <l>...]
#              [PASS <regex>])
# Runs the command as <np> processes under that MPI's launcher, which gives
# up after 240 s (ctest after 270 s).
function(acp_mpi_test name mpi np)
  cmake_parse_arguments(T "" "PASS" "COMMAND;LAUNCHER_ARGS;ENV;LABELS" ${ARGN})
  set(env ${T_ENV})
  if(mpi STREQUAL "openmpi")
    # Root needs --allow-run-as-root; 2 cores need --oversubscribe.
    set(run ${ACP_MPIRUN_OPENMPI} --allow-run-as-root --oversubscribe --timeout 240 ${T_LAUNCHER_ARGS} -np ${np})
  else()
    set(run ${ACP_MPIEXEC_MPICH} ${T_LAUNCHER_ARGS} -n ${np})
    list(APPEND env MPIEXEC_TIMEOUT=240)
  endif()
  add_test(NAME ${name} COMMAND ${run} ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES
    LABELS "c;mpi;${mpi};np${np};${T_LABELS}" TIMEOUT 270 ENVIRONMENT "${env}")
  if(T_PASS)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS}")
  endif()
endfunction()

# The C tests (all but the 4 GiB copy, and those whose script drives
# acprun itself), with the starter size each needs, as in CMakeLists.txt;
# and the channels on a random schedule, with the rings mapped (the C
# fast path of channels).
set(ACP_MPI_C_TESTS
  "t_random|65536|"
  "t_ch_random|4096|--acp-size-smem-cl,4194304"
  "t_init|4096|first,--acp-verbose,0,second"
  "t_starter|4096|"
  "t_copy|4194304|"
  "t_register|4096|"
  "t_atomic|32768|"
  "t_order|4194304|"
  "t_sync|4096|"
  "t_reset|4096|"
  "t_threads|524288|"
  "t_badinput|4096|"
  "t_passive|4194304|"
  "t_readonly|1048576|")

# Launcher-environment rung: the launcher's service is hidden from the
# program, and rank 0 listens at ACP_BOOTSTRAP_ADDR (a port picked per run
# from the shell's process id, in 20000-31999: below Linux's ephemeral
# ports, 32768 and up, which outgoing connections of any process may hold
# at that moment). Hydra passes the whole environment on; Open MPI is told
# to with -x.
set(ACP_MPI_HIDE_openmpi PMIX_NAMESPACE)
set(ACP_MPI_HIDE_mpich PMI_FD)
set(ACP_MPI_ENV_RUN_openmpi ${ACP_MPIRUN_OPENMPI} --allow-run-as-root --oversubscribe --timeout 240 -x ACP_BOOTSTRAP_ADDR -np)
set(ACP_MPI_ENV_RUN_mpich ${ACP_MPIEXEC_MPICH} -n)

foreach(mpi openmpi mpich)
  if(mpi STREQUAL "openmpi")
    set(launcher ${ACP_MPIRUN_OPENMPI})
    set(pkg ACP_OMPI)
  else()
    set(launcher ${ACP_MPIEXEC_MPICH})
    set(pkg ACP_MPICH)
  endif()
  if(NOT launcher)
    message(STATUS "tests/c: no ${mpi} launcher (Debian: openmpi-bin, mpich): the ${mpi} tests are skipped")
    continue()
  endif()

  foreach(entry ${ACP_MPI_C_TESTS})
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 prog)
    list(GET fields 1 smem)
    list(LENGTH fields nfields)
    set(args "")
    if(nfields GREATER 2)
      list(GET fields 2 args)
      string(REPLACE "," ";" args "${args}")
    endif()
    set(env "")
    if(prog STREQUAL "t_badinput")
      set(env ACP_VERBOSE=1)
    endif()
    acp_mpi_test(${prog}_${mpi}_np4 ${mpi} 4
      COMMAND $<TARGET_FILE:${prog}> ${args} --acp-size-smem ${smem} ENV ${env})
  endforeach()

  # acp_abort: the launcher ends the job (the other rank would sleep 60 s)
  # and the message reaches stderr.
  acp_mpi_test(t_abort_${mpi}_np2 ${mpi} 2 COMMAND $<TARGET_FILE:t_abort>
    LABELS abort PASS "acp_abort: test message")
  set_tests_properties(t_abort_${mpi}_np2 PROPERTIES TIMEOUT 45)

  # The launcher-environment rung with the same launcher.
  foreach(prog t_init t_copy)
    set(args first --acp-size-smem 4096 second) # t_init checks its arguments
    if(prog STREQUAL "t_copy")
      set(args --acp-size-smem 4194304)
    endif()
    add_test(NAME ${prog}_${mpi}_env_np4
      COMMAND sh -c "ACP_BOOTSTRAP_ADDR=127.0.0.1:$((20000 + $$ % 12000)) MPIEXEC_TIMEOUT=240 exec \"$0\" \"$@\""
              ${ACP_MPI_ENV_RUN_${mpi}} 4
              env -u ${ACP_MPI_HIDE_${mpi}} $<TARGET_FILE:${prog}> ${args})
    set_tests_properties(${prog}_${mpi}_env_np4 PROPERTIES LABELS "c;mpi;${mpi};np4;env" TIMEOUT 270)
  endforeach()

  # MPI and ACP in one program: both orders of initialisation, and
  # MPI_Finalize before acp_finalize (a clean failure under MPICH).
  if(NOT ${pkg}_FOUND)
    message(STATUS "tests/c: no pkg-config file for ${mpi} (Debian: libopenmpi-dev, libmpich-dev): t_mpi_ranks_${mpi} is not built")
    continue()
  endif()
  add_executable(t_mpi_ranks_${mpi} t_mpi_ranks.c acptest.h)
  target_link_libraries(t_mpi_ranks_${mpi} PRIVATE ACP::acp PkgConfig::${pkg})
  target_compile_options(t_mpi_ranks_${mpi} PRIVATE -Wall -Wextra)
  set_target_properties(t_mpi_ranks_${mpi} PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
  acp_mpi_test(t_mpi_ranks_${mpi}_np4 ${mpi} 4 COMMAND $<TARGET_FILE:t_mpi_ranks_${mpi}>)
  acp_mpi_test(t_mpi_ranks_acp_first_${mpi}_np4 ${mpi} 4 COMMAND $<TARGET_FILE:t_mpi_ranks_${mpi}> acp-first)
  acp_mpi_test(t_mpi_ranks_mpi_finalize_first_${mpi}_np2 ${mpi} 2 COMMAND $<TARGET_FILE:t_mpi_ranks_${mpi}> mpi-finalize-first)
  if(mpi STREQUAL "mpich")
    # PMI_PORT instead of the inherited socket: plain ACP programs use it;
    # an MPI program is told to start without -pmi-port (checked message).
    acp_mpi_test(t_init_mpich_pmi_port_np4 mpich 4 LAUNCHER_ARGS -pmi-port
      COMMAND $<TARGET_FILE:t_init> first --acp-size-smem 4096 second)
    acp_mpi_test(t_mpi_ranks_mpich_pmi_port_np2 mpich 2 LAUNCHER_ARGS -pmi-port
      COMMAND $<TARGET_FILE:t_mpi_ranks_mpich>
      PASS "Start the job without -pmi-port")
    set_tests_properties(t_mpi_ranks_mpich_pmi_port_np2 PROPERTIES TIMEOUT 60)
  endif()
endforeach()
