! f_abort: acp_abort from Fortran ends the job.
!
! Rank 1 calls acp_abort with a message padded with blanks (or with no
! message when the program's argument is "none"); the launcher must exit
! with status 255 and the message, without its trailing blanks, must reach
! stderr. The other ranks sleep without calling ACP and say "not
! terminated" if they ever wake up. Checked by check-abort.sh.
program f_abort
  use, intrinsic :: iso_c_binding, only: c_int
  use, intrinsic :: iso_fortran_env, only: output_unit
  use acp
  implicit none
  interface
    ! sleep(3): waits without calling ACP.
    function c_sleep(seconds) bind(C, name="sleep") result(left)
      import :: c_int
      integer(c_int), value :: seconds
      integer(c_int) :: left
    end function
  end interface
  character(len=40) :: message
  character(len=8) :: mode
  integer :: i, status

  if (acp_init() /= 0) stop 1
  mode = ''
  if (acp_command_argument_count() >= 1) call acp_get_command_argument(1, mode)
  if (acp_sync() /= 0) stop 1
  if (acp_rank() == 1) then
    write (output_unit, '(a)') 'rank 1: calling acp_abort'
    if (mode == 'none') then
      call acp_abort()
    else
      message = 'fortran abort message'
      call acp_abort(message)
    end if
    write (output_unit, '(a)') 'rank 1: FAIL: acp_abort returned'
    stop 1
  end if
  do i = 1, 60
    status = c_sleep(1_c_int)
  end do
  write (output_unit, '(a,i0,a)') 'rank ', acp_rank(), ': not terminated 60 s after rank 1 called acp_abort'
end program f_abort
