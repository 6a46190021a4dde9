! f_noargs: acp_init(use_command_line=.false.) passes no arguments.
!
! Run with the arguments "--acp-verbose 0" under acprun: the library must
! start from the ACP_* variables acprun sets alone, and the arguments stay
! with the program (acp_command_argument_count() is the intrinsic's).
program f_noargs
  use acp
  use acpftest
  implicit none
  character(len=32) :: arg
  integer :: status

  call test_init(use_command_line=.false.)
  call check_true(nprocs >= 1 .and. me >= 0 .and. me < nprocs, 'acp_rank and acp_procs after acp_init(.false.)')
  call check_int(acp_command_argument_count(), command_argument_count(), &
    'acp_command_argument_count() after acp_init(.false.) is the intrinsic''s')
  call check_int(command_argument_count(), 2, 'arguments given to the program')
  call acp_get_command_argument(1, arg, status=status)
  call check_true(arg == '--acp-verbose' .and. status == 0, 'argument 1 is still "--acp-verbose", got "' // trim(arg) // '"')
  call check_int(acp_sync(), 0, 'acp_sync')
  call test_finish('f_noargs')
end program f_noargs
