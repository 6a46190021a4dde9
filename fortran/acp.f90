! acp.f90 - Fortran binding of the ACP 3.0 basic layer (module acp).
!
! Every function of include/acp.h is here under its C name. Most are
! bind(C) interfaces that call libacp directly; three are Fortran
! procedures, because Fortran has no argc/argv and no NUL-terminated
! strings:
!
!   acp_init([use_command_line])   passes the program's command line (or
!                                  none) to the C acp_init
!   acp_abort([message])           turns a Fortran string into a C string
!   acp_command_argument_count(),  the command line without the
!   acp_get_command_argument(...)  "--acp-NAME VALUE" pairs acp_init took
!
! These live in libacp_fortran, which programs link before libacp:
!   gfortran prog.f90 -I<moddir> -L<libdir> -lacp_fortran -lacp
! (acpfc, pkg-config's fflags/flibs and CMake's ACP::acp_fortran do this).
!
! Types: GAs, atkeys and handles are integer(acp_ga_t), integer(acp_atkey_t)
! and integer(acp_handle_t), all 64-bit. Fortran has no unsigned integers:
! a GA or an 8-byte atomic operand has the same bits as in C, and GA
! arithmetic (ga + offset) works as in C. The 4-byte atomics take
! integer(c_int32_t); write values above 2**31-1 as bit patterns, e.g.
! int(z'80000000', c_int32_t). Byte counts are integer(c_size_t), ranks and
! colours default integers (c_int).
!
! Memory: acp_register_memory and acp_query_ga take type(c_ptr) addresses
! (c_loc(buffer)), so registered buffers need the TARGET attribute; give
! them ASYNCHRONOUS (or VOLATILE when a loop polls them) too, because other
! ranks change them while this one runs. acp_query_address returns a
! type(c_ptr); c_f_pointer turns it into a Fortran pointer.
module acp
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_int32_t, c_int64_t, &
    c_size_t, c_ptr, c_null_char, c_null_ptr, c_loc, c_f_pointer, c_associated
  implicit none
  private

  ! ---- Kinds and constants (acp.h) ----------------------------------------

  !> Kind of a global address (acp_ga_t: uint64_t in C).
  integer, parameter, public :: acp_ga_t = c_int64_t
  !> Kind of an address translation key (acp_atkey_t: uint64_t in C).
  integer, parameter, public :: acp_atkey_t = c_int64_t
  !> Kind of an operation handle (acp_handle_t: int64_t in C).
  integer, parameter, public :: acp_handle_t = c_int64_t

  integer, parameter, public :: ACP_VERSION_MAJOR = 3
  integer, parameter, public :: ACP_VERSION_MINOR = 0
  integer, parameter, public :: ACP_VERSION_PATCH = 0

  integer(acp_atkey_t), parameter, public :: ACP_ATKEY_NULL = 0_acp_atkey_t
  integer(acp_ga_t), parameter, public :: ACP_GA_NULL = 0_acp_ga_t
  integer(acp_handle_t), parameter, public :: ACP_HANDLE_NULL = 0_acp_handle_t
  ! 0xffffffffffffffff and 0xfffffffffffffffe in C: the same bits.
  integer(acp_handle_t), parameter, public :: ACP_HANDLE_ALL = -1_acp_handle_t
  integer(acp_handle_t), parameter, public :: ACP_HANDLE_CONT = -2_acp_handle_t

  ! ---- Fortran procedures -------------------------------------------------

  public :: acp_init, acp_abort
  public :: acp_command_argument_count, acp_get_command_argument

  ! ---- Infrastructure -----------------------------------------------------

  public :: acp_finalize, acp_reset, acp_sync, acp_rank, acp_procs

  interface
    !> Completes every outstanding operation and ends the library.
    !> Collective. 0, or -1 when not initialised.
    function acp_finalize() bind(C, name="acp_finalize") result(status)
      import :: c_int
      integer(c_int) :: status
    end function

    !> Re-numbers the ranks (collective): every process names its new rank,
    !> a permutation of 0..acp_procs()-1. Drops all registrations, clears
    !> the starter memory, restarts handles at 1. 0, or -1 everywhere.
    function acp_reset(rank) bind(C, name="acp_reset") result(status)
      import :: c_int
      integer(c_int), value :: rank
      integer(c_int) :: status
    end function

    !> Completes the caller's operations, then waits for every process.
    function acp_sync() bind(C, name="acp_sync") result(status)
      import :: c_int
      integer(c_int) :: status
    end function

    !> The caller's rank, 0..acp_procs()-1; -1 when not initialised.
    function acp_rank() bind(C, name="acp_rank") result(rank)
      import :: c_int
      integer(c_int) :: rank
    end function

    !> The number of processes; -1 when not initialised.
    function acp_procs() bind(C, name="acp_procs") result(procs)
      import :: c_int
      integer(c_int) :: procs
    end function
  end interface

  ! ---- Global memory management ------------------------------------------

  public :: acp_query_starter_ga, acp_register_memory, acp_unregister_memory
  public :: acp_query_ga, acp_query_address, acp_query_rank, acp_query_color
  public :: acp_colors

  interface
    !> GA of byte 0 of rank's starter memory; ACP_GA_NULL for a bad rank.
    function acp_query_starter_ga(rank) bind(C, name="acp_query_starter_ga") result(ga)
      import :: c_int, acp_ga_t
      integer(c_int), value :: rank
      integer(acp_ga_t) :: ga
    end function

    !> Makes size bytes at addr (c_loc of a TARGET) accessible to every
    !> process; ACP_ATKEY_NULL on failure.
    function acp_register_memory(addr, size, color) bind(C, name="acp_register_memory") result(atkey)
      import :: c_ptr, c_size_t, c_int, acp_atkey_t
      type(c_ptr), value :: addr
      integer(c_size_t), value :: size
      integer(c_int), value :: color
      integer(acp_atkey_t) :: atkey
    end function

    !> Withdraws a registration of the caller. 0, or -1.
    function acp_unregister_memory(atkey) bind(C, name="acp_unregister_memory") result(status)
      import :: c_int, acp_atkey_t
      integer(acp_atkey_t), value :: atkey
      integer(c_int) :: status
    end function

    !> GA of the byte at addr inside the registration atkey; ACP_GA_NULL
    !> when addr is outside it.
    function acp_query_ga(atkey, addr) bind(C, name="acp_query_ga") result(ga)
      import :: c_ptr, acp_atkey_t, acp_ga_t
      integer(acp_atkey_t), value :: atkey
      type(c_ptr), value :: addr
      integer(acp_ga_t) :: ga
    end function

    !> Local address of a GA of the caller's own memory; c_null_ptr otherwise.
    function acp_query_address(ga) bind(C, name="acp_query_address") result(addr)
      import :: c_ptr, acp_ga_t
      integer(acp_ga_t), value :: ga
      type(c_ptr) :: addr
    end function

    !> Rank owning ga; -1 for ACP_GA_NULL and invalid GAs.
    function acp_query_rank(ga) bind(C, name="acp_query_rank") result(rank)
      import :: c_int, acp_ga_t
      integer(acp_ga_t), value :: ga
      integer(c_int) :: rank
    end function

    !> Colour of ga; -1 for ACP_GA_NULL and invalid GAs.
    function acp_query_color(ga) bind(C, name="acp_query_color") result(color)
      import :: c_int, acp_ga_t
      integer(acp_ga_t), value :: ga
      integer(c_int) :: color
    end function

    !> Number of colours (>= 1); -1 when not initialised.
    function acp_colors() bind(C, name="acp_colors") result(colors)
      import :: c_int
      integer(c_int) :: colors
    end function
  end interface

  ! ---- Global memory access -----------------------------------------------
  ! Non-blocking: each returns a handle (> 0), or ACP_HANDLE_NULL when the
  ! call is rejected. order: ACP_HANDLE_NULL, a handle, ACP_HANDLE_ALL or
  ! ACP_HANDLE_CONT (see acp_copy(3)).

  public :: acp_copy
  public :: acp_cas4, acp_cas8, acp_swap4, acp_swap8, acp_add4, acp_add8
  public :: acp_xor4, acp_xor8, acp_or4, acp_or8, acp_and4, acp_and8
  public :: acp_complete, acp_inquire

  interface
    !> Copies size bytes from src to dst; both may belong to any ranks.
    function acp_copy(dst, src, size, order) bind(C, name="acp_copy") result(handle)
      import :: c_size_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_size_t), value :: size
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    ! Atomics on the word at src (any rank); its old value lands at dst.
    function acp_cas4(dst, src, oldval, newval, order) bind(C, name="acp_cas4") result(handle)
      import :: c_int32_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int32_t), value :: oldval, newval
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_cas8(dst, src, oldval, newval, order) bind(C, name="acp_cas8") result(handle)
      import :: c_int64_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int64_t), value :: oldval, newval
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_swap4(dst, src, value, order) bind(C, name="acp_swap4") result(handle)
      import :: c_int32_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int32_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_swap8(dst, src, value, order) bind(C, name="acp_swap8") result(handle)
      import :: c_int64_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int64_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_add4(dst, src, value, order) bind(C, name="acp_add4") result(handle)
      import :: c_int32_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int32_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_add8(dst, src, value, order) bind(C, name="acp_add8") result(handle)
      import :: c_int64_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int64_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_xor4(dst, src, value, order) bind(C, name="acp_xor4") result(handle)
      import :: c_int32_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int32_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_xor8(dst, src, value, order) bind(C, name="acp_xor8") result(handle)
      import :: c_int64_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int64_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_or4(dst, src, value, order) bind(C, name="acp_or4") result(handle)
      import :: c_int32_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int32_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_or8(dst, src, value, order) bind(C, name="acp_or8") result(handle)
      import :: c_int64_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int64_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_and4(dst, src, value, order) bind(C, name="acp_and4") result(handle)
      import :: c_int32_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int32_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    function acp_and8(dst, src, value, order) bind(C, name="acp_and8") result(handle)
      import :: c_int64_t, acp_ga_t, acp_handle_t
      integer(acp_ga_t), value :: dst, src
      integer(c_int64_t), value :: value
      integer(acp_handle_t), value :: order
      integer(acp_handle_t) :: handle
    end function

    !> Waits until handle and everything issued before it completed.
    subroutine acp_complete(handle) bind(C, name="acp_complete")
      import :: acp_handle_t
      integer(acp_handle_t), value :: handle
    end subroutine

    !> 0 when handle and everything before it completed, 1 otherwise.
    function acp_inquire(handle) bind(C, name="acp_inquire") result(running)
      import :: c_int, acp_handle_t
      integer(acp_handle_t), value :: handle
      integer(c_int) :: running
    end function
  end interface

  ! ---- C functions behind the Fortran procedures -------------------------

  interface
    function c_acp_init(argc, argv) bind(C, name="acp_init") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: argc, argv ! int *, char ***
      integer(c_int) :: status
    end function

    subroutine c_acp_abort(str) bind(C, name="acp_abort")
      import :: c_ptr
      type(c_ptr), value :: str
    end subroutine

    function c_strlen(str) bind(C, name="strlen") result(length)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: str
      integer(c_size_t) :: length
    end function
  end interface

  ! The program's arguments that acp_init left (element 1 is argument 0,
  ! the program name); unallocated until acp_init read the command line.
  type :: argument_text
    character(len=:), allocatable :: text
  end type
  type(argument_text), allocatable, save :: kept_arguments(:)

contains

  !> Initialises the library; collective (returns when every process has).
  !>
  !> With use_command_line absent or .true., the program's command line is
  !> passed to the C acp_init, which takes the "--acp-NAME VALUE" pairs from
  !> it (settings, and the options the original ACP launcher appends). The
  !> Fortran intrinsics still see those pairs; acp_command_argument_count
  !> and acp_get_command_argument give the arguments without them.
  !> With use_command_line = .false. no arguments are passed: settings then
  !> come only from ACP_* environment variables, which is how acprun passes
  !> them.
  !>
  !> Returns 0, or -1 (with a message on stderr).
  function acp_init(use_command_line) result(status)
    logical, intent(in), optional :: use_command_line
    integer :: status
    logical :: pass_arguments
    integer(c_int), target :: argc
    type(c_ptr), allocatable, target :: argv(:)
    type(c_ptr), target :: argv_address
    character(kind=c_char), allocatable, target :: chars(:)
    integer, allocatable :: lengths(:)
    integer :: nargs, i, j, offset

    pass_arguments = .true.
    if (present(use_command_line)) pass_arguments = use_command_line
    if (.not. pass_arguments) then
      status = int(c_acp_init(c_null_ptr, c_null_ptr))
      return
    end if

    ! One buffer holds every argument, NUL-terminated; argv points into it.
    nargs = command_argument_count()
    allocate (lengths(0:nargs))
    do i = 0, nargs
      call get_command_argument(i, length=lengths(i))
    end do
    allocate (chars(sum(lengths + 1)), argv(0:nargs + 1))
    offset = 1
    do i = 0, nargs
      block
        character(len=lengths(i)) :: arg
        call get_command_argument(i, value=arg)
        do j = 1, lengths(i)
          chars(offset + j - 1) = arg(j:j)
        end do
      end block
      chars(offset + lengths(i)) = c_null_char
      argv(i) = c_loc(chars(offset))
      offset = offset + lengths(i) + 1
    end do
    argv(nargs + 1) = c_null_ptr
    argc = int(nargs + 1, c_int)
    argv_address = c_loc(argv)

    status = int(c_acp_init(c_loc(argc), c_loc(argv_address)))

    ! acp_init moved the arguments it kept to the front of argv.
    if (allocated(kept_arguments)) deallocate (kept_arguments)
    allocate (kept_arguments(max(int(argc), 0)))
    do i = 1, size(kept_arguments)
      kept_arguments(i)%text = c_string(argv(i - 1))
    end do
  end function acp_init

  !> Ends the calling process after an error: message (trailing blanks
  !> removed; absent means no message) is printed on stderr with the rank,
  !> and the process exits with status 255. Does not return. Fortran output
  !> written before is flushed first.
  subroutine acp_abort(message)
    use, intrinsic :: iso_fortran_env, only: output_unit, error_unit
    character(len=*), intent(in), optional :: message
    character(kind=c_char), allocatable, target :: text(:)
    integer :: i, n

    flush (output_unit)
    flush (error_unit)
    if (.not. present(message)) then
      call c_acp_abort(c_null_ptr)
      return
    end if
    n = len_trim(message)
    allocate (text(n + 1))
    do i = 1, n
      text(i) = message(i:i)
    end do
    text(n + 1) = c_null_char
    call c_acp_abort(c_loc(text))
  end subroutine acp_abort

  !> Number of command-line arguments without those acp_init took (like
  !> command_argument_count()). Before acp_init, or after
  !> acp_init(use_command_line=.false.), the intrinsic's value.
  function acp_command_argument_count() result(count)
    integer :: count
    if (allocated(kept_arguments)) then
      count = size(kept_arguments) - 1
    else
      count = command_argument_count()
    end if
  end function acp_command_argument_count

  !> Argument number of the command line without those acp_init took (like
  !> get_command_argument: 0 is the program; status -1 when value is too
  !> short, 1 when there is no such argument).
  subroutine acp_get_command_argument(number, value, length, status)
    integer, intent(in) :: number
    character(len=*), intent(out), optional :: value
    integer, intent(out), optional :: length, status

    if (.not. allocated(kept_arguments)) then
      call get_command_argument(number, value, length, status)
      return
    end if
    if (number < 0 .or. number >= size(kept_arguments)) then
      if (present(value)) value = ""
      if (present(length)) length = 0
      if (present(status)) status = 1
      return
    end if
    associate (text => kept_arguments(number + 1)%text)
      if (present(value)) value = text
      if (present(length)) length = len(text)
      if (present(status)) then
        status = 0
        if (present(value)) then
          if (len(value) < len(text)) status = -1
        end if
      end if
    end associate
  end subroutine acp_get_command_argument

  ! A Fortran copy of the C string at address.
  function c_string(address) result(text)
    type(c_ptr), intent(in) :: address
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n

    if (.not. c_associated(address)) then
      text = ""
      return
    end if
    n = int(c_strlen(address))
    call c_f_pointer(address, chars, [n])
    allocate (character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function c_string

end module acp
