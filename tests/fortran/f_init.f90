! f_init: the Fortran binding's infrastructure and memory management.
!
! Run with the arguments "first --acp-verbose 0 second": acp_init must take
! the "--acp-verbose 0" pair and leave "first" and "second" to the program.
! Checks the constants against the C header's bit patterns, rank and
! process count, starter GAs of every rank, registration of a Fortran
! array (GA arithmetic, query functions, double unregister), the handle
! functions on handles that need no waiting, and acp_sync.
program f_init
  use, intrinsic :: iso_c_binding, only: c_int64_t, c_size_t, c_ptr, c_loc, c_associated, c_null_ptr
  use acp
  use acpftest
  implicit none
  integer(c_int64_t), allocatable, target :: region(:)
  integer(acp_atkey_t) :: key
  integer(acp_ga_t) :: ga, starter
  integer(acp_handle_t) :: h
  character(len=32) :: arg
  integer :: r, length, status

  call test_init()

  ! ---- constants: the same bits as acp.h ---------------------------------
  call check_hex(ACP_HANDLE_ALL, not(0_c_int64_t), 'ACP_HANDLE_ALL is 0xffffffffffffffff')
  call check_hex(ACP_HANDLE_CONT, ibclr(not(0_c_int64_t), 0), 'ACP_HANDLE_CONT is 0xfffffffffffffffe')
  call check_int(ACP_HANDLE_ALL, -1_c_int64_t, 'ACP_HANDLE_ALL as a signed 64-bit value')
  call check_int(ACP_HANDLE_CONT, -2_c_int64_t, 'ACP_HANDLE_CONT as a signed 64-bit value')
  call check_int(ACP_HANDLE_NULL, 0_c_int64_t, 'ACP_HANDLE_NULL')
  call check_int(ACP_GA_NULL, 0_c_int64_t, 'ACP_GA_NULL')
  call check_int(ACP_ATKEY_NULL, 0_c_int64_t, 'ACP_ATKEY_NULL')
  call check_true(storage_size(ga) == 64 .and. storage_size(key) == 64 .and. storage_size(h) == 64, &
    'acp_ga_t, acp_atkey_t and acp_handle_t are 64-bit kinds')
  call check_int(ACP_VERSION_MAJOR, 3, 'ACP_VERSION_MAJOR')

  ! ---- the command line without the --acp-* pair -------------------------
  call check_int(acp_command_argument_count(), 2, 'acp_command_argument_count() after acp_init')
  call acp_get_command_argument(1, arg, length, status)
  call check_true(arg == 'first' .and. status == 0 .and. length == 5, 'argument 1 is "first", got "' // trim(arg) // '"')
  call acp_get_command_argument(2, arg, length, status)
  call check_true(arg == 'second' .and. status == 0, 'argument 2 is "second", got "' // trim(arg) // '"')
  call acp_get_command_argument(3, arg, length, status)
  call check_int(status, 1, 'status of acp_get_command_argument(3) (there is none)')
  call acp_get_command_argument(2, arg(1:3), length, status)
  call check_int(status, -1, 'status of acp_get_command_argument(2) into 3 characters (too short)')
  call check_int(length, 6, 'length of argument 2')

  ! ---- ranks ----------------------------------------------------------------
  call check_true(me >= 0 .and. me < nprocs, 'acp_rank() within 0..acp_procs()-1')
  call check_true(acp_colors() >= 1, 'acp_colors() >= 1')
  do r = 0, nprocs - 1
    starter = acp_query_starter_ga(r)
    call check_true(starter /= ACP_GA_NULL, 'acp_query_starter_ga of every rank is not ACP_GA_NULL')
    call check_int(acp_query_rank(starter), r, 'acp_query_rank(acp_query_starter_ga(r)) = r')
    call check_int(acp_query_color(starter), 0, 'starter memory has colour 0')
    call check_true(c_associated(acp_query_address(starter)) .eqv. (r == me), &
      'acp_query_address of a starter GA is non-NULL exactly for my own')
  end do
  call check_int(acp_query_starter_ga(nprocs), ACP_GA_NULL, 'acp_query_starter_ga(acp_procs())')
  call check_int(acp_query_starter_ga(-1), ACP_GA_NULL, 'acp_query_starter_ga(-1)')
  call check_int(acp_query_rank(ACP_GA_NULL), -1, 'acp_query_rank(ACP_GA_NULL)')
  call check_int(acp_query_color(ACP_GA_NULL), -1, 'acp_query_color(ACP_GA_NULL)')
  call check_true(.not. c_associated(acp_query_address(ACP_GA_NULL)), 'acp_query_address(ACP_GA_NULL) is NULL')

  ! ---- registration of a Fortran array ------------------------------------
  allocate (region(0:99))
  key = acp_register_memory(c_loc(region), int(storage_size(region) / 8 * size(region), c_size_t), 0)
  call check_true(key /= ACP_ATKEY_NULL, 'acp_register_memory of a 100-word array')
  ga = acp_query_ga(key, c_loc(region(0)))
  call check_true(ga /= ACP_GA_NULL, 'acp_query_ga of the first word')
  call check_int(acp_query_ga(key, c_loc(region(10))), ga + 80, 'GA of word 10 is the GA of word 0 + 80')
  call check_true(addr_equal(acp_query_address(ga + 80), c_loc(region(10))), &
    'acp_query_address(GA of word 10) is the address of word 10')
  call check_int(acp_query_rank(ga), me, 'acp_query_rank of my registered GA')
  call check_int(acp_query_color(ga), 0, 'acp_query_color of my colour-0 registration')
  call check_int(acp_register_memory(c_null_ptr, 8_c_size_t, 0), ACP_ATKEY_NULL, 'acp_register_memory(NULL)')
  call check_int(acp_register_memory(c_loc(region), 8_c_size_t, acp_colors()), ACP_ATKEY_NULL, &
    'acp_register_memory with colour acp_colors()')

  ! ---- handles that need no waiting --------------------------------------
  h = acp_copy(ga + 8, ga, 8_c_size_t, ACP_HANDLE_NULL)
  call check_true(h > 0, 'acp_copy inside my registered array returns a handle > 0')
  call acp_complete(h)
  call check_int(acp_inquire(h), 0, 'acp_inquire after acp_complete')
  call check_int(acp_inquire(ACP_HANDLE_NULL), 0, 'acp_inquire(ACP_HANDLE_NULL)')
  call check_int(acp_inquire(h + 1000), 0, 'acp_inquire of a handle never issued')
  call acp_complete(ACP_HANDLE_NULL)
  call acp_complete(ACP_HANDLE_CONT)
  call check_int(acp_inquire(ACP_HANDLE_ALL), 0, 'acp_inquire(ACP_HANDLE_ALL) with nothing in flight')

  call check_int(acp_unregister_memory(key), 0, 'acp_unregister_memory')
  call check_int(acp_unregister_memory(key), -1, 'second acp_unregister_memory of the same key')
  call check_int(acp_unregister_memory(ACP_ATKEY_NULL), -1, 'acp_unregister_memory(ACP_ATKEY_NULL)')
  call check_int(acp_sync(), 0, 'acp_sync')

  call test_finish('f_init')

contains

  logical function addr_equal(a, b)
    type(c_ptr), intent(in) :: a, b
    addr_equal = c_associated(a, b)
  end function addr_equal

end program f_init
