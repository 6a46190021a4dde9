! acpftest.f90 - helpers shared by the Fortran tests of libacp (the
! Fortran counterpart of tests/c/acptest.h).
!
! Every test is an ordinary ACP program: it uses module acp, runs under
! acprun, checks every value it can and exits non-zero when a check
! failed. A failed check prints one line
!
!     rank R: FAIL what (got X, want Y)
!
! and the test goes on, so one run shows every wrong value; collective
! calls stay matched across ranks because no check returns early.
module acpftest
  use, intrinsic :: iso_c_binding, only: c_int, c_int32_t, c_int64_t, c_size_t, &
    c_ptr, c_loc, c_f_pointer, c_associated
  use, intrinsic :: iso_fortran_env, only: output_unit
  use acp
  implicit none
  private
  public :: test_init, test_finish, test_fatal, check_int, check_hex, check_true
  public :: starter_words, allgather_ga, wait_handle, me, nprocs

  integer, save :: me = -1, nprocs = 0
  integer, save :: failures = 0, checks = 0
  ! Print at most this many failure lines per process; all are counted.
  integer, parameter :: max_printed = 60

  interface check_int
    module procedure check_int32, check_int64
  end interface

contains

  subroutine report(what, got_want)
    character(len=*), intent(in) :: what, got_want
    failures = failures + 1
    if (failures > max_printed) then
      if (failures == max_printed + 1) write (output_unit, '(a,i0,a)') 'rank ', me, ': further failures not printed'
      return
    end if
    write (output_unit, '(a,i0,4a)') 'rank ', me, ': FAIL ', what, got_want
    flush (output_unit)
  end subroutine report

  !> Compares integers, shown in decimal (ranks, return codes, handles).
  subroutine check_int64(got, want, what)
    integer(c_int64_t), intent(in) :: got, want
    character(len=*), intent(in) :: what
    character(len=80) :: gw
    checks = checks + 1
    if (got == want) return
    write (gw, '(a,i0,a,i0,a)') ' (got ', got, ', want ', want, ')'
    call report(what, trim(gw))
  end subroutine check_int64

  subroutine check_int32(got, want, what)
    integer(c_int32_t), intent(in) :: got, want
    character(len=*), intent(in) :: what
    call check_int64(int(got, c_int64_t), int(want, c_int64_t), what)
  end subroutine check_int32

  !> Compares 64-bit patterns, shown in hex (GAs, words).
  subroutine check_hex(got, want, what)
    integer(c_int64_t), intent(in) :: got, want
    character(len=*), intent(in) :: what
    character(len=80) :: gw
    checks = checks + 1
    if (got == want) return
    write (gw, '(a,z16.16,a,z16.16,a)') ' (got 0x', got, ', want 0x', want, ')'
    call report(what, trim(gw))
  end subroutine check_hex

  !> A condition that has no single expected value.
  subroutine check_true(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. cond) call report(what, '')
  end subroutine check_true

  !> A step that cannot fail without making the rest meaningless.
  subroutine test_fatal(what)
    character(len=*), intent(in) :: what
    write (output_unit, '(a,i0,3a)') 'rank ', me, ': FAIL ', what, ' (cannot continue)'
    flush (output_unit)
    stop 1
  end subroutine test_fatal

  subroutine test_init(use_command_line)
    logical, intent(in), optional :: use_command_line
    if (acp_init(use_command_line) /= 0) call test_fatal('acp_init returned non-zero')
    me = acp_rank()
    nprocs = acp_procs()
  end subroutine test_init

  !> Finalizes, prints the summary and ends the program with the test's
  !> exit status.
  subroutine test_finish(name)
    character(len=*), intent(in) :: name
    if (acp_finalize() /= 0) call report('acp_finalize returned non-zero', '')
    if (failures > 0) then
      write (output_unit, '(a,i0,3a,i0,a,i0,a)') 'rank ', me, ': ', name, ': ', failures, ' of ', checks, &
        ' checks FAILED'
      flush (output_unit)
      stop 1
    end if
    write (output_unit, '(a,i0,3a,i0,a)') 'rank ', me, ': ', name, ': all ', checks, ' checks passed'
    flush (output_unit)
  end subroutine test_finish

  !> The caller's starter memory as 64-bit words (words(1) is byte 0).
  !> Stops with the setting to change when it holds fewer than n words.
  function starter_words(n) result(words)
    integer, intent(in) :: n
    integer(c_int64_t), pointer :: words(:)
    integer(acp_ga_t) :: ga
    character(len=120) :: msg
    ga = acp_query_starter_ga(me)
    if (.not. c_associated(acp_query_address(ga + int(8 * n - 1, acp_ga_t)))) then
      write (msg, '(a,i0,a,i0)') 'starter memory is smaller than ', 8 * n, &
        ' bytes; run with --acp-size-smem ', 8 * n
      call test_fatal(trim(msg))
    end if
    call c_f_pointer(acp_query_address(ga), words, [n])
  end function starter_words

  !> Every rank contributes ga; the result holds rank r's value at index r.
  !> Uses starter words 1..nprocs+1 the way ACP programs exchange GAs:
  !> store in my starter memory, synchronise, copy each peer's slot into my
  !> own memory. Collective.
  function allgather_ga(ga) result(all)
    integer(acp_ga_t), intent(in) :: ga
    integer(acp_ga_t) :: all(0:nprocs - 1)
    integer(c_int64_t), pointer :: words(:)
    integer(acp_ga_t) :: mine
    integer :: r
    words => starter_words(nprocs + 1)
    mine = acp_query_starter_ga(me)
    words(1) = ga
    if (acp_sync() /= 0) call test_fatal('acp_sync in allgather_ga')
    do r = 0, nprocs - 1
      if (acp_copy(mine + 8_acp_ga_t * (r + 1), acp_query_starter_ga(r), 8_c_size_t, ACP_HANDLE_NULL) &
          == ACP_HANDLE_NULL) call test_fatal("acp_copy of a peer's starter slot returned ACP_HANDLE_NULL")
    end do
    call acp_complete(ACP_HANDLE_ALL)
    all = words(2:nprocs + 1)
    ! nobody reuses the slots before everybody has read them
    if (acp_sync() /= 0) call test_fatal('acp_sync in allgather_ga')
  end function allgather_ga

  !> Waits for a handle; ACP_HANDLE_NULL is a failure of the call that gave it.
  subroutine wait_handle(handle, what)
    integer(acp_handle_t), intent(in) :: handle
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (handle == ACP_HANDLE_NULL) then
      call report(what // ' returned ACP_HANDLE_NULL', '')
      return
    end if
    call acp_complete(handle)
  end subroutine wait_handle

end module acpftest
