! A Fortran client of fdb_c.h, bound through ISO_C_BINDING as MeteoSwiss's
! FDB5 bindings are (interfaces to the C functions, NUL-terminated strings,
! opaque handles as c_ptr), linked with -lfdb5. Run by
! crates/fieldstore-capi/tests/c_api.rs with FDB5_CONFIG_FILE naming a
! config (FDB5's own variable: the client is set up for FDB5).
!
! It archives three fields with explicit keys, flushes, lists them with a
! request naming parameters by MARS short names, retrieves two and checks
! their bytes, reads an error message, and releases everything. Prints
! "fortran: N checks, M failed"; exits 1 on a failure.
module fdb_c
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: FDB_SUCCESS = 0, FDB_ITERATION_COMPLETE = 3
  interface
    integer(c_int) function fdb_initialise() bind(C, name="fdb_initialise")
      import :: c_int
    end function
    type(c_ptr) function fdb_error_string(err) bind(C, name="fdb_error_string")
      import :: c_int, c_ptr
      integer(c_int), value :: err
    end function
    integer(c_int) function fdb_new_handle(fdb) bind(C, name="fdb_new_handle")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: fdb
    end function
    integer(c_int) function fdb_delete_handle(fdb) bind(C, name="fdb_delete_handle")
      import :: c_int, c_ptr
      type(c_ptr), value :: fdb
    end function
    integer(c_int) function fdb_new_key(key) bind(C, name="fdb_new_key")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: key
    end function
    integer(c_int) function fdb_key_add(key, param, value) bind(C, name="fdb_key_add")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: key
      character(kind=c_char), dimension(*), intent(in) :: param, value
    end function
    integer(c_int) function fdb_delete_key(key) bind(C, name="fdb_delete_key")
      import :: c_int, c_ptr
      type(c_ptr), value :: key
    end function
    integer(c_int) function fdb_archive(fdb, key, data, length) bind(C, name="fdb_archive")
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: fdb, key
      character(kind=c_char), dimension(*), intent(in) :: data
      integer(c_size_t), value :: length
    end function
    integer(c_int) function fdb_flush(fdb) bind(C, name="fdb_flush")
      import :: c_int, c_ptr
      type(c_ptr), value :: fdb
    end function
    integer(c_int) function fdb_new_request(req) bind(C, name="fdb_new_request")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: req
    end function
    integer(c_int) function fdb_request_add(req, param, values, n) bind(C, name="fdb_request_add")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: req
      character(kind=c_char), dimension(*), intent(in) :: param
      type(c_ptr), dimension(*), intent(in) :: values
      integer(c_int), value :: n
    end function
    integer(c_int) function fdb_delete_request(req) bind(C, name="fdb_delete_request")
      import :: c_int, c_ptr
      type(c_ptr), value :: req
    end function
    integer(c_int) function fdb_list(fdb, req, it, duplicates, depth) bind(C, name="fdb_list")
      import :: c_int, c_ptr, c_bool
      type(c_ptr), value :: fdb, req
      type(c_ptr), intent(out) :: it
      logical(c_bool), value :: duplicates
      integer(c_int), value :: depth
    end function
    integer(c_int) function fdb_listiterator_next(it) bind(C, name="fdb_listiterator_next")
      import :: c_int, c_ptr
      type(c_ptr), value :: it
    end function
    integer(c_int) function fdb_listiterator_attrs(it, uri, off, len) &
        bind(C, name="fdb_listiterator_attrs")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: it
      type(c_ptr), intent(out) :: uri
      integer(c_size_t), intent(out) :: off, len
    end function
    integer(c_int) function fdb_delete_listiterator(it) bind(C, name="fdb_delete_listiterator")
      import :: c_int, c_ptr
      type(c_ptr), value :: it
    end function
    integer(c_int) function fdb_new_datareader(dr) bind(C, name="fdb_new_datareader")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: dr
    end function
    integer(c_int) function fdb_retrieve(fdb, req, dr) bind(C, name="fdb_retrieve")
      import :: c_int, c_ptr
      type(c_ptr), value :: fdb, req, dr
    end function
    integer(c_int) function fdb_datareader_open(dr, size) bind(C, name="fdb_datareader_open")
      import :: c_int, c_ptr, c_long
      type(c_ptr), value :: dr
      integer(c_long), intent(out) :: size
    end function
    integer(c_int) function fdb_datareader_read(dr, buf, count, nread) &
        bind(C, name="fdb_datareader_read")
      import :: c_int, c_ptr, c_long, c_char
      type(c_ptr), value :: dr
      character(kind=c_char), dimension(*), intent(out) :: buf
      integer(c_long), value :: count
      integer(c_long), intent(out) :: nread
    end function
    integer(c_int) function fdb_delete_datareader(dr) bind(C, name="fdb_delete_datareader")
      import :: c_int, c_ptr
      type(c_ptr), value :: dr
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface
end module fdb_c

program fdb_client
  use fdb_c
  implicit none
  integer :: checks = 0, failures = 0, i, rc
  type(c_ptr) :: fdb, key, req, it, dr, uri
  integer(c_size_t) :: off, flen
  integer(c_long) :: total, nread
  character(kind=c_char, len=16), target :: params(3) = &
      [character(len=16) :: "167" // c_null_char, "165" // c_null_char, "166" // c_null_char]
  character(kind=c_char, len=16), target :: wanted(1) = [character(len=16) :: "2t/10U" // c_null_char]
  character(kind=c_char, len=16), target :: fixed(9, 2)
  ! The fixed values, NUL-terminated for C (Fortran pads with blanks).
  character(kind=c_char, len=17), target :: cvalues(9)
  type(c_ptr) :: values(1)
  character(kind=c_char, len=64) :: field, got
  integer :: listed

  fixed(:, 1) = [character(len=16) :: "class", "expver", "stream", "date", "time", "domain", &
                 "type", "levtype", "step"]
  fixed(:, 2) = [character(len=16) :: "od", "0001", "oper", "20231201", "1200", "g", "fc", "sfc", "6"]
  do i = 1, 9
    cvalues(i) = trim(fixed(i, 2)) // c_null_char
  end do

  call check(fdb_initialise(), "fdb_initialise")
  call check(fdb_new_handle(fdb), "fdb_new_handle")

  do i = 1, 3
    call check(fdb_new_key(key), "fdb_new_key")
    call add_fixed(key)
    call check(fdb_key_add(key, "param" // c_null_char, params(i)), "fdb_key_add param")
    field = "fortran field " // trim(params(i)(1:3))
    call check(fdb_archive(fdb, key, field, int(len_trim(field), c_size_t)), "fdb_archive")
    call check(fdb_delete_key(key), "fdb_delete_key")
  end do
  call check(fdb_flush(fdb), "fdb_flush")

  ! List by short names: 2t is 167, 10u is 165.
  call check(fdb_new_request(req), "fdb_new_request")
  values(1) = c_loc(cvalues(1))
  call check(fdb_request_add(req, "class" // c_null_char, values, 1_c_int), "fdb_request_add class")
  values(1) = c_loc(wanted(1))
  call check(fdb_request_add(req, "param" // c_null_char, values, 1_c_int), "fdb_request_add param")
  call check(fdb_list(fdb, req, it, .true._c_bool, 3_c_int), "fdb_list")
  listed = 0
  do
    rc = fdb_listiterator_next(it)
    if (rc == FDB_ITERATION_COMPLETE) exit
    call check(rc, "fdb_listiterator_next")
    if (rc /= FDB_SUCCESS) exit
    call check(fdb_listiterator_attrs(it, uri, off, flen), "fdb_listiterator_attrs")
    call expect(flen == 17 .and. c_strlen(uri) > 0, "a listed field has its length and a path")
    listed = listed + 1
  end do
  call expect(listed == 2, "two fields listed by name")
  call check(fdb_delete_listiterator(it), "fdb_delete_listiterator")

  ! Retrieve them: a complete request, by name, in request order.
  do i = 1, 9
    values(1) = c_loc(cvalues(i))
    call check(fdb_request_add(req, trim(fixed(i, 1)) // c_null_char, values, 1_c_int), &
        "fdb_request_add")
  end do
  call check(fdb_new_datareader(dr), "fdb_new_datareader")
  call check(fdb_retrieve(fdb, req, dr), "fdb_retrieve")
  call check(fdb_datareader_open(dr, total), "fdb_datareader_open")
  call expect(total == 34, "two fields of 17 bytes retrieved")
  got = ""
  call check(fdb_datareader_read(dr, got, int(len(got), c_long), nread), "fdb_datareader_read")
  call expect(nread == 34, "34 bytes read")
  call expect(got(1:34) == "fortran field 167fortran field 165", "the bytes, in request order")
  call check(fdb_delete_datareader(dr), "fdb_delete_datareader")
  call check(fdb_delete_request(req), "fdb_delete_request")

  ! An error: a key without its step names the missing keyword.
  call check(fdb_new_key(key), "fdb_new_key")
  call check(fdb_key_add(key, "class" // c_null_char, "od" // c_null_char), "fdb_key_add")
  rc = fdb_archive(fdb, key, "x", 1_c_size_t)
  call expect(rc /= FDB_SUCCESS .and. index(message(rc), "expver") > 0, &
      "an incomplete key fails, naming what is missing")
  call check(fdb_delete_key(key), "fdb_delete_key")
  ! A deleted handle is an error, not a crash.
  call check(fdb_delete_handle(fdb), "fdb_delete_handle")
  rc = fdb_flush(fdb)
  call expect(rc /= FDB_SUCCESS .and. index(message(rc), "was deleted") > 0, &
      "a deleted handle is refused")

  print '(a, i0, a, i0, a)', "fortran: ", checks, " checks, ", failures, " failed"
  if (failures > 0) stop 1

contains

  subroutine add_fixed(key)
    type(c_ptr), intent(in) :: key
    integer :: j
    do j = 1, 9
      call check(fdb_key_add(key, trim(fixed(j, 1)) // c_null_char, trim(fixed(j, 2)) // c_null_char), &
          "fdb_key_add")
    end do
  end subroutine

  function message(code) result(text)
    integer(c_int), intent(in) :: code
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: n, j
    p = fdb_error_string(code)
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: text)
    do j = 1, n
      text(j:j) = chars(j)
    end do
  end function

  subroutine check(code, what)
    integer(c_int), intent(in) :: code
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (code /= FDB_SUCCESS) then
      failures = failures + 1
      print '(a, a, a, i0, a, a)', "FAILED: ", what, " -> ", code, ": ", message(code)
    end if
  end subroutine

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      print '(a, a)', "FAILED: ", what
    end if
  end subroutine
end program fdb_client
