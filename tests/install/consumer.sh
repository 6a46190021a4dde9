#!/bin/sh
# consumer.sh HOW PREFIX SOURCE WORK - build tests/consumer/ring.c or
# ring.f90 out of tree against the installed libacp in PREFIX only, the way
# HOW says, and run it under the installed acprun with 4 processes. Every
# rank checks what it received; all 4 must report "ring ok".
#
#   c-pkgconfig        cc + pkg-config --cflags --libs acp + rpath variable
#   c-wrapper          acpcc
#   cxx-wrapper        acpcxx (ring.cpp)
#   fortran-wrapper    acpfc
#   fortran-pkgconfig  gfortran + pkg-config fflags/flibs + rpath variable
#   cmake              tests/consumer with find_package(ACP), its own ctest
#   relocated          the installed tree moved elsewhere: wrappers,
#                      pkg-config and CMake must follow it
#   man                `man acp_cas8` and the other pages through MANPATH
set -eu
how=$1
prefix=$2
src=$3
work=$4
consumer=$src/tests/consumer
rm -rf "$work"
mkdir -p "$work"
cd "$work"

# Only the installed tree: nothing from the caller's environment may help.
unset PKG_CONFIG_PATH CPATH C_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH ACP_ROOT MANPATH
for var in $(env | sed -n 's/^\(ACP_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$var"
done

fail() {
	echo "consumer $how: FAIL: $*"
	exit 1
}

# run_ring PROGRAM [ACPRUN]: 4 ranks, each must say "ring ok".
run_ring() {
	acprun=${2:-$prefix/bin/acprun}
	status=0
	"$acprun" -np 4 --timeout 60 "$1" >ring.out 2>&1 || status=$?
	cat ring.out
	[ "$status" -eq 0 ] || fail "$acprun -np 4 $1 exited with status $status"
	ok=$(grep -c "of 4: ring ok" ring.out || true)
	[ "$ok" -eq 4 ] || fail "$ok of 4 ranks said \"ring ok\""
}

# The consumer project builds its Fortran program when libacp has Fortran.
fortran=OFF
[ -x "$prefix/bin/acpfc" ] && fortran=ON

case $how in
c-pkgconfig)
	export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
	set -x
	cc -Wall -Wextra -O2 "$consumer/ring.c" -o ring $(pkg-config --cflags --libs acp) $(pkg-config --variable=rpath acp)
	set +x
	run_ring ./ring
	;;
c-wrapper)
	"$prefix/bin/acpcc" -show -Wall -O2 "$consumer/ring.c" -o ring
	"$prefix/bin/acpcc" -Wall -Wextra -O2 "$consumer/ring.c" -o ring
	run_ring ./ring
	# Compiling only: no link flags.
	"$prefix/bin/acpcc" -show -c ring.c | grep -q -- -lacp && fail "acpcc -show -c adds -lacp"
	"$prefix/bin/acpcc" -c "$consumer/ring.c" -o ring.o
	"$prefix/bin/acpcc" ring.o -o ring_from_object
	run_ring ./ring_from_object
	# CC chooses the compiler; CC=acpcc (as build systems are told) is
	# the wrapper itself, not a compiler to run again for ever.
	CC="gcc -std=c11" "$prefix/bin/acpcc" -show -c x.c | grep -q '^gcc -std=c11 ' || fail "acpcc ignores CC"
	CC=$prefix/bin/acpcc timeout 20 "$prefix/bin/acpcc" -c "$consumer/ring.c" -o ring_cc.o ||
		fail "CC=acpcc acpcc -c ring.c failed or ran acpcc again and again (status $?)"
	# Without a file nothing is linked: acpcc -v asks the compiler's version.
	"$prefix/bin/acpcc" -v >version.out 2>&1 || fail "acpcc -v failed: $(tail -n 3 version.out)"
	# The original ACP's -ndev DEVICE is accepted and left out.
	"$prefix/bin/acpcc" -ndev udp "$consumer/ring.c" -o ring_ndev || fail "acpcc -ndev udp failed"
	"$prefix/bin/acpcc" -show -ndev ib -c x.c | grep -q -e -ndev -e ' ib ' && fail "acpcc passes -ndev ib to the compiler"
	# -static cannot link the shared-only libacp: say so, not "cannot find -lacp".
	"$prefix/bin/acpcc" -static "$consumer/ring.c" -o ring_static 2>static.err && fail "acpcc -static linked"
	grep -q "shared library only" static.err || fail "acpcc -static says: $(cat static.err)"
	"$prefix/bin/acpcc" -static -c "$consumer/ring.c" -o ring_static.o || fail "acpcc -static -c failed"
	;;
cxx-wrapper)
	"$prefix/bin/acpcxx" -show -O2 -I"$consumer" "$consumer/ring.cpp" -o ring
	"$prefix/bin/acpcxx" -Wall -O2 -I"$consumer" "$consumer/ring.cpp" -o ring
	run_ring ./ring
	;;
fortran-wrapper)
	[ -x "$prefix/bin/acpfc" ] || fail "$prefix/bin/acpfc is missing: libacp was built without Fortran (install gfortran and rebuild)"
	"$prefix/bin/acpfc" -show -O2 "$consumer/ring.f90" -o ring
	"$prefix/bin/acpfc" -Wall -O2 "$consumer/ring.f90" -o ring
	run_ring ./ring
	FC=false "$prefix/bin/acpfc" -show x.f90 | grep -q '^false ' || fail "acpfc ignores FC"
	FC=acpfc PATH=$prefix/bin:$PATH timeout 20 "$prefix/bin/acpfc" -c "$consumer/ring.f90" -o ring_fc.o ||
		fail "FC=acpfc acpfc -c ring.f90 failed or ran acpfc again and again (status $?)"
	;;
fortran-pkgconfig)
	export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
	fflags=$(pkg-config --variable=fflags acp)
	[ -n "$fflags" ] || fail "acp.pc has no fflags variable: libacp was built without Fortran"
	for var in fmoddir fcflags flibs; do
		[ -n "$(pkg-config --variable=$var acp)" ] || fail "acp.pc has no $var variable"
	done
	set -x
	gfortran $fflags -O2 "$consumer/ring.f90" -o ring $(pkg-config --variable=flibs acp) $(pkg-config --variable=rpath acp)
	set +x
	run_ring ./ring
	;;
cmake)
	cmake -S "$consumer" -B build -DCMAKE_PREFIX_PATH="$prefix" -DACP_CONSUMER_FORTRAN=$fortran >cmake.log 2>&1 || {
		cat cmake.log
		fail "configuring tests/consumer with find_package(ACP) failed"
	}
	grep "Found ACP" cmake.log
	cmake --build build >build.log 2>&1 || {
		cat build.log
		fail "building tests/consumer failed"
	}
	ctest --test-dir build --output-on-failure --timeout 120 || fail "the consumer's own tests failed"
	# find_package through ACP_ROOT too (what the modulefiles set).
	ACP_ROOT=$prefix cmake -S "$consumer" -B build-root -DACP_CONSUMER_FORTRAN=OFF >cmake-root.log 2>&1 || {
		cat cmake-root.log
		fail "find_package(ACP) through ACP_ROOT failed"
	}
	# A version newer than installed is refused.
	cat >too-new.cmake <<-EOC
		find_package(ACP 4.0 QUIET CONFIG PATHS "$prefix" NO_DEFAULT_PATH)
		if(ACP_FOUND)
		  message(FATAL_ERROR "find_package(ACP 4.0) accepted libacp \${ACP_VERSION}")
		endif()
	EOC
	cmake -P too-new.cmake || fail "find_package(ACP 4.0) did not refuse libacp 3"
	;;
relocated)
	cp -a "$prefix" moved
	moved=$(pwd -P)/moved
	"$moved/bin/acpcc" -show ring.c | grep -q -- "-I$moved/include" || fail "acpcc in the moved tree does not use it: $("$moved/bin/acpcc" -show ring.c)"
	"$moved/bin/acpcc" -O2 "$consumer/ring.c" -o ring_wrapper
	run_ring ./ring_wrapper "$moved/bin/acprun"
	readelf -d ring_wrapper | grep -q "$moved/lib" || fail "ring built in the moved tree has no rpath to $moved/lib"
	libdir=$(PKG_CONFIG_PATH=$moved/lib/pkgconfig pkg-config --variable=libdir acp)
	[ "$(cd "$libdir" && pwd -P)" = "$moved/lib" ] || fail "pkg-config libdir of the moved tree is $libdir"
	cmake -S "$consumer" -B build -DCMAKE_PREFIX_PATH="$moved" -DACP_CONSUMER_FORTRAN=$fortran >cmake.log 2>&1 || {
		cat cmake.log
		fail "find_package(ACP) in the moved tree failed"
	}
	grep -q "Found ACP 3.0.0: $moved/" cmake.log || fail "find_package(ACP) did not find the moved tree: $(grep 'Found ACP' cmake.log)"
	cmake --build build >build.log 2>&1 || {
		cat build.log
		fail "building against the moved tree failed"
	}
	ctest --test-dir build --output-on-failure --timeout 120 || fail "the consumer's tests against the moved tree failed"
	;;
man)
	command -v man >/dev/null 2>&1 || fail "man is not installed (apt-get install man-db)"
	for name in acp acprun acp_info acpcc acpfc acp_init acp_sync acp_register_memory acp_query_ga \
		acp_copy acp_atomic acp_cas8 acp_and4 acp_complete acp_inquire acp_fortran; do
		MANPATH=$prefix/share/man man "$name" 2>man.err | col -b >page.txt || true
		[ -s page.txt ] || fail "man $name shows nothing: $(cat man.err)"
		grep -qi "$name" page.txt || fail "man $name does not mention $name"
	done
	# man -w follows the .so link to acp_atomic.3.
	MANPATH=$prefix/share/man man -w acp_cas8 | grep -q "^$prefix/share/man/man3/acp_" ||
		fail "man -w acp_cas8 is $(MANPATH=$prefix/share/man man -w acp_cas8)"
	MANPATH=$prefix/share/man man acp_cas8 | col -b | grep -q "compare" || fail "man acp_cas8 does not show acp_atomic(3)"
	# Every function of acp.h has a page under its own name.
	missing=
	for name in $(sed -n 's/^[a-z][a-z_0-9]*[ *][ *]*\(acp_[a-z_0-9]*\)(.*/\1/p' "$prefix/include/acp.h" | sort -u); do
		[ -f "$prefix/share/man/man3/$name.3" ] || missing="$missing $name"
	done
	[ -z "$missing" ] || fail "functions of acp.h without a page in $prefix/share/man/man3:$missing"
	echo "consumer man: every page and link resolves"
	;;
*)
	fail "unknown way $how"
	;;
esac
echo "consumer $how: ok"
