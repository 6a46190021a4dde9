! ring.f90 - the Fortran twin of ring.c: a complete ACP program that a
! newcomer builds against an installed libacp (acpfc, pkg-config's fflags,
! CMake's ACP::acp_fortran, modules) and runs under acprun. It checks what
! it receives and stops with status 1 when a value is wrong.
!
!   1. rank r puts 16 words into rank r+1's buffer;
!   2. rank r copies rank r+1's words into rank r+2's buffer (neither end
!      is the caller's when there are 3 or more ranks);
!   3. every rank adds r+1 to a counter in rank 0's starter memory.
program ring
  use, intrinsic :: iso_c_binding, only: c_int64_t, c_size_t, c_loc, c_f_pointer
  use acp
  implicit none
  integer, parameter :: nwords = 16
  integer(c_int64_t), target, volatile :: buf(0:3 * nwords - 1)
  integer(c_int64_t), pointer, volatile :: starter(:)
  integer(acp_atkey_t) :: key
  integer(acp_ga_t) :: my_starter, next_buf, next2_buf
  integer(acp_handle_t) :: h, a
  integer :: me, n, i, failures

  if (acp_init() /= 0) stop 1
  me = acp_rank()
  n = acp_procs()
  failures = 0

  ! buf: source, put target, copy target (nwords each)
  do i = 0, nwords - 1
    buf(i) = word(me, i)
  end do
  key = acp_register_memory(c_loc(buf), int(8 * size(buf), c_size_t), 0)
  if (key == ACP_ATKEY_NULL) call acp_abort('acp_register_memory failed')

  ! starter words: 1 my buffer's GA, 2 the counter (rank 0's is used),
  ! 3 and 4 the GAs of ranks r+1 and r+2, 5 the old value of my add
  my_starter = acp_query_starter_ga(me)
  call c_f_pointer(acp_query_address(my_starter), starter, [5])
  starter(1) = acp_query_ga(key, c_loc(buf))
  if (acp_sync() /= 0) stop 1
  call acp_complete(acp_copy(my_starter + 16, acp_query_starter_ga(modulo(me + 1, n)), 8_c_size_t, ACP_HANDLE_NULL))
  call acp_complete(acp_copy(my_starter + 24, acp_query_starter_ga(modulo(me + 2, n)), 8_c_size_t, ACP_HANDLE_NULL))
  next_buf = starter(3)
  next2_buf = starter(4)
  if (acp_sync() /= 0) stop 1

  ! 1. put; acp_sync completes it and waits for everybody's
  call acp_complete(acp_copy(next_buf + 8 * nwords, starter(1), int(8 * nwords, c_size_t), ACP_HANDLE_NULL))
  if (acp_sync() /= 0) stop 1
  ! 2. the third-party copy of what rank r+1 received
  h = acp_copy(next2_buf + 16 * nwords, next_buf + 8 * nwords, int(8 * nwords, c_size_t), ACP_HANDLE_NULL)
  ! 3. started after the copy (order = h): add to rank 0's counter
  a = acp_add8(my_starter + 32, acp_query_starter_ga(0) + 8, int(me + 1, c_int64_t), h)
  if (h == ACP_HANDLE_NULL .or. a == ACP_HANDLE_NULL) call acp_abort('acp_copy or acp_add8 returned ACP_HANDLE_NULL')
  call acp_complete(a)
  if (acp_sync() /= 0) stop 1

  do i = 0, nwords - 1
    call check(buf(nwords + i), word(modulo(me - 1, n), i), 'word put by the previous rank')
    call check(buf(2 * nwords + i), word(modulo(me - 2, n), i), 'word copied from rank r-1 by rank r-2')
  end do
  if (me == 0) call check(starter(2), int(n * (n + 1) / 2, c_int64_t), 'counter after every rank''s acp_add8')
  if (starter(5) < 0 .or. starter(5) > n * (n + 1) / 2 - (me + 1)) &
    call check(starter(5), -1_c_int64_t, 'old value fetched by acp_add8 is out of range')

  if (acp_unregister_memory(key) /= 0) call check(1_c_int64_t, 0_c_int64_t, 'acp_unregister_memory')
  if (acp_finalize() /= 0) stop 1
  if (failures > 0) then
    print '(a,i0,a,i0,a)', 'rank ', me, ' of ', n, ': FAILED'
    stop 1
  end if
  print '(a,i0,a,i0,a)', 'rank ', me, ' of ', n, ': ring ok'

contains

  integer(c_int64_t) function word(rank, i)
    integer, intent(in) :: rank, i
    word = ishft(int(rank, c_int64_t), 20) + i
  end function word

  subroutine check(got, want, what)
    integer(c_int64_t), intent(in) :: got, want
    character(len=*), intent(in) :: what
    if (got == want) return
    print '(a,i0,3a,i0,a,i0,a)', 'rank ', me, ': FAIL ', what, ' (got ', got, ', want ', want, ')'
    failures = failures + 1
  end subroutine check

end program ring
