! f_atomic: the twelve atomics from Fortran, across ranks.
!
! Every rank registers an array of 8-byte words, one of 4-byte words and
! one for fetched results; the GAs are exchanged through starter memory.
! Checked, with every rank taking part at once:
!   add8   every rank adds (rank+1) rounds times to rank 0's counter
!   add4   a word at 0xfffffff0 wraps to 0 (the operands are unsigned)
!   cas8   an election: exactly one rank swaps 0 for its mark
!   cas4   a compare that fails leaves the word and fetches it
!   swap   each rank swaps into the next rank's word and fetches the
!          owner's initial value
!   or, and, xor (4 and 8 bytes): each rank sets, clears or flips its own
!          bit(s) of one word; bit 31 of the 4-byte words is used too
!   remote result: rank r adds to rank r+1's word and has the old value
!          stored at rank r+2 (neither the target nor the result is the
!          caller's)
!   order: a cas8 that starts after an add8 by its handle sees its result
program f_atomic
  use, intrinsic :: iso_c_binding, only: c_int32_t, c_int64_t, c_size_t, c_loc
  use acp
  use acpftest
  implicit none

  integer, parameter :: rounds = 50
  integer, parameter :: nwords = 16
  ! 8-byte words of each rank
  integer, parameter :: w_counter = 0, w_election = 1, w_swap = 2, w_or = 3, w_and = 4, w_xor = 5, &
    w_remote = 6, w_order = 7
  ! 4-byte words of each rank
  integer, parameter :: v_wrap = 0, v_cas = 1, v_swap = 2, v_or = 3, v_and = 4, v_xor = 5

  integer(c_int64_t), allocatable, target, volatile :: w8(:), results(:)
  integer(c_int32_t), allocatable, target, volatile :: w4(:)
  integer(acp_atkey_t) :: key8, key4, key_results
  integer(acp_ga_t), allocatable :: ga8(:), ga4(:), ga_results(:)
  integer(acp_ga_t), allocatable :: gathered(:)
  integer(acp_handle_t) :: h, h2
  integer(c_int64_t) :: total, all_bits
  integer :: k, r, winners, winner
  character(len=120) :: what

  call test_init()

  allocate (w8(0:nwords - 1), w4(0:nwords - 1), results(0:rounds + nwords - 1))
  w8 = 0
  w4 = 0
  results = 0
  key8 = acp_register_memory(c_loc(w8), int(8 * nwords, c_size_t), 0)
  key4 = acp_register_memory(c_loc(w4), int(4 * nwords, c_size_t), 0)
  key_results = acp_register_memory(c_loc(results), int(8 * size(results), c_size_t), 0)
  if (key8 == ACP_ATKEY_NULL .or. key4 == ACP_ATKEY_NULL .or. key_results == ACP_ATKEY_NULL) &
    call test_fatal('acp_register_memory of the atomic words')
  allocate (ga8(0:nprocs - 1), ga4(0:nprocs - 1), ga_results(0:nprocs - 1))
  ga8 = allgather_ga(acp_query_ga(key8, c_loc(w8)))
  ga4 = allgather_ga(acp_query_ga(key4, c_loc(w4)))
  ga_results = allgather_ga(acp_query_ga(key_results, c_loc(results)))

  ! Initial values, set by each owner before anybody starts.
  w4(v_wrap) = int(z'FFFFFFF0', c_int32_t)
  w4(v_cas) = 12345
  w4(v_swap) = -me
  w4(v_and) = -1
  w8(w_swap) = 1000 * me
  w8(w_and) = -1
  w8(w_remote) = 100 * me
  call check_int(acp_sync(), 0, 'acp_sync after setting the initial values')

  ! ---- add8 under contention ---------------------------------------------
  do k = 0, rounds - 1
    h = acp_add8(result_ga(k), word8(0, w_counter), int(me + 1, c_int64_t), ACP_HANDLE_NULL)
    call check_true(h > 0, 'acp_add8 on rank 0''s counter returns a handle')
  end do
  call acp_complete(ACP_HANDLE_ALL)
  total = int(rounds, c_int64_t) * nprocs * (nprocs + 1) / 2
  do k = 0, rounds - 1
    call check_true(results(k) >= 0 .and. results(k) <= total - (me + 1), &
      'acp_add8 fetched an old value between 0 and the total minus my operand')
  end do
  do k = 1, rounds - 1
    call check_true(results(k) /= results(k - 1), 'two of my acp_add8 fetched the same old value')
  end do

  ! ---- add4 wraps ------------------------------------------------------------
  h = acp_add4(result_ga(rounds), word4(nxt(1), v_wrap), 16_c_int32_t, ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_add4 on the next rank''s word')
  call check_hex(results(rounds), int(z'00000000FFFFFFF0', c_int64_t), &
    'acp_add4 fetched 0xfffffff0 (upper half of the 8-byte result word untouched)')

  ! ---- cas8 election and a failing cas4 ------------------------------------
  h = acp_cas8(result_ga(rounds + 1), word8(0, w_election), 0_c_int64_t, int(me + 1, c_int64_t), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_cas8 on rank 0''s election word')
  h = acp_cas4(result_ga(rounds + 2), word4(nxt(1), v_cas), 999_c_int32_t, 7_c_int32_t, ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_cas4 with a wrong old value')
  call check_hex(results(rounds + 2), 12345_c_int64_t, 'acp_cas4 with a wrong old value fetched the word unchanged')

  ! ---- swap ----------------------------------------------------------------
  h = acp_swap8(result_ga(rounds + 3), word8(nxt(1), w_swap), int(7 * me, c_int64_t), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_swap8 on the next rank''s word')
  call check_int(results(rounds + 3), int(1000 * nxt(1), c_int64_t), 'acp_swap8 fetched the owner''s initial value')
  h = acp_swap4(result_ga(rounds + 4), word4(nxt(1), v_swap), int(z'80000000', c_int32_t), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_swap4 on the next rank''s word')
  ! The fetched 4 bytes are the low half of the zeroed 8-byte result word.
  call check_hex(results(rounds + 4), iand(int(-nxt(1), c_int64_t), int(z'FFFFFFFF', c_int64_t)), &
    'acp_swap4 fetched the owner''s initial value')

  ! ---- or, and, xor on one word of rank 0 or the last rank -----------------
  h = acp_or8(result_ga(rounds + 5), word8(0, w_or), ishft(1_c_int64_t, me), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_or8 on rank 0')
  call check_true(.not. btest(results(rounds + 5), me), 'acp_or8 fetched a word without my bit')
  h = acp_and8(result_ga(rounds + 6), word8(nprocs - 1, w_and), not(ishft(1_c_int64_t, me)), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_and8 on the last rank')
  call check_true(btest(results(rounds + 6), me), 'acp_and8 fetched a word with my bit still set')
  h = acp_xor8(result_ga(rounds + 7), word8(0, w_xor), ishft(3_c_int64_t, 2 * me), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_xor8 on rank 0')
  h = acp_or4(result_ga(rounds + 8), word4(0, v_or), bit4(me), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_or4 on rank 0')
  h = acp_and4(result_ga(rounds + 9), word4(nprocs - 1, v_and), not(bit4(me)), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_and4 on the last rank')
  h = acp_xor4(result_ga(rounds + 10), word4(0, v_xor), bit4(me), ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_xor4 on rank 0')

  ! ---- remote result: target r+1, result at r+2 ---------------------------
  h = acp_add8(ga_results(nxt(2)) + 8_acp_ga_t * (rounds + 11), word8(nxt(1), w_remote), 5_c_int64_t, ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_add8 on rank r+1 with the result at rank r+2')

  ! ---- order: cas8 after add8 by handle -------------------------------------
  h = acp_add8(result_ga(rounds + 12), word8(me, w_order), 41_c_int64_t, ACP_HANDLE_NULL)
  h2 = acp_cas8(result_ga(rounds + 13), word8(me, w_order), 41_c_int64_t, 42_c_int64_t, h)
  call wait_handle(h2, 'acp_cas8 ordered after acp_add8')
  call check_int(acp_inquire(h), 0, 'acp_inquire(add8 handle) after completing the cas8 ordered after it')
  call check_int(results(rounds + 13), 41_c_int64_t, 'the ordered acp_cas8 fetched the acp_add8''s result')

  call check_int(acp_sync(), 0, 'acp_sync after the atomics')

  ! ---- results every rank can check now ---------------------------------
  all_bits = ishft(1_c_int64_t, nprocs) - 1
  if (me == 0) then
    call check_int(w8(w_counter), total, 'rank 0''s counter after every acp_add8')
    call check_true(w8(w_election) >= 1 .and. w8(w_election) <= nprocs, 'rank 0''s election word holds a rank mark')
    call check_hex(w8(w_or), all_bits, 'rank 0''s acp_or8 word has every rank''s bit')
    call check_hex(w8(w_xor), xor_total(), 'rank 0''s acp_xor8 word')
    call check_hex(int(w4(v_or), c_int64_t), int(sum_bits4(), c_int64_t), 'rank 0''s acp_or4 word has every rank''s bit')
    call check_hex(int(w4(v_xor), c_int64_t), int(sum_bits4(), c_int64_t), 'rank 0''s acp_xor4 word')
  end if
  if (me == nprocs - 1) then
    call check_hex(w8(w_and), not(all_bits), 'the last rank''s acp_and8 word has every rank''s bit cleared')
    call check_hex(int(w4(v_and), c_int64_t), int(not(sum_bits4()), c_int64_t), &
      'the last rank''s acp_and4 word has every rank''s bit cleared')
  end if
  call check_int(w4(v_wrap), 0_c_int32_t, 'my 4-byte word 0xfffffff0 after the previous rank added 16')
  call check_int(w4(v_cas), 12345_c_int32_t, 'my 4-byte word after a failed acp_cas4')
  call check_int(w8(w_swap), int(7 * nxt(-1), c_int64_t), 'my swap word holds the previous rank''s value')
  call check_int(w4(v_swap), int(z'80000000', c_int32_t), 'my 4-byte swap word holds 0x80000000')
  call check_int(w8(w_remote), int(100 * me + 5, c_int64_t), 'my word after the previous rank''s acp_add8')
  write (what, '(a,i0,a,i0)') 'the old value of rank ', nxt(-1), '''s word, stored here by rank ', nxt(-2)
  call check_int(results(rounds + 11), int(100 * nxt(-1), c_int64_t), trim(what))
  call check_int(w8(w_order), 42_c_int64_t, 'my order word after acp_add8 then acp_cas8')

  ! The election had exactly one winner, the one whose mark rank 0 holds.
  allocate (gathered(0:nprocs - 1))
  gathered = allgather_ga(results(rounds + 1))
  winners = count(gathered == 0)
  call check_int(winners, 1, 'number of ranks whose acp_cas8 found 0 (exactly one wins)')
  winner = -1
  do r = 0, nprocs - 1
    if (gathered(r) == 0) winner = r
    if (gathered(r) /= 0) call check_true(gathered(r) >= 1 .and. gathered(r) <= nprocs, &
      'a losing acp_cas8 fetched a rank mark')
  end do
  h = acp_copy(result_ga(rounds + 14), word8(0, w_election), 8_c_size_t, ACP_HANDLE_NULL)
  call wait_handle(h, 'acp_copy of rank 0''s election word')
  call check_int(results(rounds + 14), int(winner + 1, c_int64_t), 'rank 0''s election word is the winner''s mark')

  call test_finish('f_atomic')

contains

  integer function nxt(k)
    integer, intent(in) :: k
    nxt = modulo(me + k, nprocs)
  end function nxt

  integer(acp_ga_t) function word8(rank, i)
    integer, intent(in) :: rank, i
    word8 = ga8(rank) + 8_acp_ga_t * i
  end function word8

  integer(acp_ga_t) function word4(rank, i)
    integer, intent(in) :: rank, i
    word4 = ga4(rank) + 4_acp_ga_t * i
  end function word4

  integer(acp_ga_t) function result_ga(i)
    integer, intent(in) :: i
    result_ga = ga_results(me) + 8_acp_ga_t * i
  end function result_ga

  ! Rank r's bit of the 4-byte or/and/xor words: rank 0 uses bit 31 (the
  ! sign bit in Fortran), the others bit r-1.
  integer(c_int32_t) function bit4(rank)
    integer, intent(in) :: rank
    if (rank == 0) then
      bit4 = int(z'80000000', c_int32_t)
    else
      bit4 = ishft(1_c_int32_t, rank - 1)
    end if
  end function bit4

  integer(c_int32_t) function sum_bits4()
    integer :: rank
    sum_bits4 = 0
    do rank = 0, nprocs - 1
      sum_bits4 = ior(sum_bits4, bit4(rank))
    end do
  end function sum_bits4

  integer(c_int64_t) function xor_total()
    integer :: rank
    xor_total = 0
    do rank = 0, nprocs - 1
      xor_total = ieor(xor_total, ishft(3_c_int64_t, 2 * rank))
    end do
  end function xor_total

end program f_atomic
