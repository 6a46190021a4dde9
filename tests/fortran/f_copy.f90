! f_copy: acp_copy from Fortran between every kind of placement.
!
! Every rank registers one Fortran array with three areas: a source, a
! destination and a second destination; their GAs are exchanged through
! starter memory. A phase is a list of transfers computed identically on
! every rank (issuer, source rank and area, destination rank and area; no
! two share a destination). Per phase: fill my source with words that name
! the phase, my rank and the index, fill my destinations with a canary;
! sync; issue my transfers; complete; sync; check every word of my
! destinations and the guard word after each.
!
! Phases, for 1, 129 and 70000 words: local, put (to rank r+1), get (from
! rank r+1), third-party ring (rank r copies from r+1 to r+2, so the caller
! owns neither end), third-party by rank 0 alone, and ordered chains: a put
! followed by a remote-to-remote copy of what it wrote, started after it by
! its handle, by ACP_HANDLE_ALL and by ACP_HANDLE_CONT.
program f_copy
  use, intrinsic :: iso_c_binding, only: c_int64_t, c_size_t, c_loc
  use, intrinsic :: iso_fortran_env, only: output_unit
  use acp
  use acpftest
  implicit none

  integer, parameter :: max_words = 70000
  integer, parameter :: area_src = 0, area_dst = 1, area_dst2 = 2, nareas = 3
  ! Each area holds max_words words and a guard word.
  integer, parameter :: area_words = max_words + 1
  integer(c_int64_t), parameter :: canary = int(z'A5A5A5A5A5A5A5A5', c_int64_t)
  integer, parameter :: sizes(3) = [1, 129, max_words]

  type :: transfer
    integer :: issuer, dst_rank, dst_area, src_rank, src_area
    integer :: chained_order = 0 ! 0: none; else which order the second copy uses
  end type

  integer(c_int64_t), allocatable, target, volatile :: space(:)
  integer(acp_atkey_t) :: key
  integer(acp_ga_t), allocatable :: space_ga(:)
  integer :: phase = 0, s

  call test_init()
  if (nprocs < 2 .and. me == 0) write (output_unit, '(a)') 'f_copy: put, get and third-party phases need 2 or more ranks'

  allocate (space(0:nareas * area_words - 1))
  space = 0
  key = acp_register_memory(c_loc(space), int(8 * size(space), c_size_t), 0)
  if (key == ACP_ATKEY_NULL) call test_fatal('acp_register_memory of the copy areas')
  allocate (space_ga(0:nprocs - 1))
  space_ga = allgather_ga(acp_query_ga(key, c_loc(space)))
  do s = 0, nprocs - 1
    call check_int(acp_query_rank(space_ga(s)), s, 'acp_query_rank of an exchanged GA')
  end do

  do s = 1, size(sizes)
    call run_size(sizes(s))
  end do

  call check_int(acp_unregister_memory(key), 0, 'acp_unregister_memory of the copy areas')
  call test_finish('f_copy')

contains

  ! The word at index i of a source filled in the current phase by rank.
  pure integer(c_int64_t) function word(rank, i)
    integer, intent(in) :: rank, i
    word = ishft(int(phase, c_int64_t), 40) + ishft(int(rank, c_int64_t), 32) + i
  end function word

  integer(acp_ga_t) function ga_of(rank, area)
    integer, intent(in) :: rank, area
    ga_of = space_ga(rank) + 8_acp_ga_t * area * area_words
  end function ga_of

  integer function nxt(k)
    integer, intent(in) :: k
    nxt = modulo(me + k, nprocs)
  end function nxt

  subroutine run_size(nwords)
    integer, intent(in) :: nwords
    type(transfer) :: x(nprocs)
    integer :: r, how

    do r = 0, nprocs - 1
      x(r + 1) = transfer(r, r, area_dst, r, area_src)
    end do
    call run_phase('local', x, nwords)
    if (nprocs < 2) return
    do r = 0, nprocs - 1
      x(r + 1) = transfer(r, modulo(r + 1, nprocs), area_dst, r, area_src)
    end do
    call run_phase('put', x, nwords)
    do r = 0, nprocs - 1
      x(r + 1) = transfer(r, r, area_dst, modulo(r + 1, nprocs), area_src)
    end do
    call run_phase('get', x, nwords)
    if (nprocs < 3) return
    do r = 0, nprocs - 1
      x(r + 1) = transfer(r, modulo(r + 2, nprocs), area_dst, modulo(r + 1, nprocs), area_src)
    end do
    call run_phase('third-party ring', x, nwords)
    x(1) = transfer(0, 2, area_dst, 1, area_src)
    x(2) = transfer(0, 3, area_dst, 2, area_src)
    call run_phase('third-party by rank 0', x(1:min(2, nprocs - 2)), nwords)
    do how = 1, 3
      ! put to r+1, then copy that from r+1 to r+2 (second destination)
      do r = 0, nprocs - 1
        x(r + 1) = transfer(r, modulo(r + 1, nprocs), area_dst, r, area_src, how)
      end do
      call run_phase('ordered chain', x, nwords)
    end do
  end subroutine run_size

  subroutine run_phase(name, x, nwords)
    character(len=*), intent(in) :: name
    type(transfer), intent(in) :: x(:)
    integer, intent(in) :: nwords
    integer :: i

    phase = phase + 1
    do i = 1, nwords
      space(area_src * area_words + i - 1) = word(me, i)
    end do
    space(area_dst * area_words:) = canary
    call check_int(acp_sync(), 0, 'acp_sync before ' // name)
    do i = 1, size(x)
      if (x(i)%issuer == me) call issue(name, x(i), nwords)
    end do
    call acp_complete(ACP_HANDLE_ALL)
    call check_int(acp_sync(), 0, 'acp_sync after ' // name)
    call verify(name, x, nwords)
  end subroutine run_phase

  subroutine issue(name, t, nwords)
    character(len=*), intent(in) :: name
    type(transfer), intent(in) :: t
    integer, intent(in) :: nwords
    integer(acp_handle_t) :: h, h2, order
    integer(c_size_t) :: nbytes
    character(len=160) :: what

    nbytes = int(8 * nwords, c_size_t)
    h = acp_copy(ga_of(t%dst_rank, t%dst_area), ga_of(t%src_rank, t%src_area), nbytes, ACP_HANDLE_NULL)
    write (what, '(2a,i0,a,i0,a,i0)') name, ': acp_copy of ', nwords, ' words from rank ', t%src_rank, &
      ' to rank ', t%dst_rank
    call check_true(h > 0, trim(what) // ' returns a handle')
    if (t%chained_order == 0) return
    select case (t%chained_order)
    case (1)
      order = h
    case (2)
      order = ACP_HANDLE_ALL
    case default
      order = ACP_HANDLE_CONT
    end select
    ! Remote to remote: neither end is the caller's.
    h2 = acp_copy(ga_of(modulo(t%dst_rank + 1, nprocs), area_dst2), ga_of(t%dst_rank, t%dst_area), nbytes, order)
    call check_true(h2 > h, trim(what) // ', then the ordered remote-to-remote copy returns a later handle')
    call acp_complete(h2)
    call check_int(acp_inquire(h), 0, trim(what) // ': acp_inquire of the first copy after completing the second')
  end subroutine issue

  subroutine verify(name, x, nwords)
    character(len=*), intent(in) :: name
    type(transfer), intent(in) :: x(:)
    integer, intent(in) :: nwords
    integer :: area, i, from
    character(len=200) :: what

    do area = area_dst, area_dst2
      from = -1
      do i = 1, size(x)
        if (area == area_dst .and. x(i)%dst_rank == me) from = x(i)%src_rank
        if (area == area_dst2 .and. x(i)%chained_order /= 0 .and. modulo(x(i)%dst_rank + 1, nprocs) == me) &
          from = x(i)%src_rank
      end do
      write (what, '(2a,i0,a,i0)') name, ', ', nwords, ' words, destination area ', area
      call check_area(trim(what), area, nwords, from)
    end do
  end subroutine verify

  ! Checks nwords words of an area against rank from's source words (from
  ! = -1: nobody wrote them), and the guard word after them.
  subroutine check_area(what, area, nwords, from)
    character(len=*), intent(in) :: what
    integer, intent(in) :: area, nwords, from
    integer :: i, bad, first
    integer(c_int64_t) :: want, got, first_got, first_want
    character(len=40) :: source

    bad = 0
    first = 0
    do i = 1, nwords
      want = canary
      if (from >= 0) want = word(from, i)
      got = space(area * area_words + i - 1)
      if (got /= want) then
        if (bad == 0) then
          first = i
          first_got = got
          first_want = want
        end if
        bad = bad + 1
      end if
    end do
    source = 'untouched'
    if (from >= 0) write (source, '(a,i0)') 'data from rank ', from
    if (bad > 0) then
      call check_hex(first_got, first_want, what // ': ' // trim(source) // ', first wrong word ' // itoa(first) // &
        ' of ' // itoa(bad) // ' wrong')
    else
      call check_true(.true., what)
    end if
    call check_hex(space(area * area_words + nwords), canary, what // ': guard word after the data')
  end subroutine check_area

  function itoa(i) result(text)
    integer, intent(in) :: i
    character(len=:), allocatable :: text
    character(len=12) :: buf
    write (buf, '(i0)') i
    text = trim(buf)
  end function itoa

end program f_copy
