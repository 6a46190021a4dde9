#!/bin/sh
# modules.sh SYSTEM PREFIX SOURCE WORK CACHE - `module load acp` with the
# modulefiles installed in PREFIX, under SYSTEM (lmod or tcl: Lmod, or
# Environment Modules), in a clean shell; then build tests/consumer/ring.c
# with nothing but the environment the module set (cc ring.c -lacp: CPATH
# and LIBRARY_PATH; pkg-config; CMake through CMAKE_PREFIX_PATH) and run it
# with the acprun and the libacp that PATH and LD_LIBRARY_PATH find. Also
# checks ACP_ROOT, MANPATH, that loading twice or another version never
# loads two, and that unloading restores the environment.
#
# Debian's lmod and environment-modules packages conflict, so at most one
# of them is installed. The other is taken from its Debian package,
# unpacked into CACHE (apt-get download, dpkg-deb -x; no installation).
# Exit 77 (skipped) when the module system cannot be had.
set -eu
system=$1
prefix=$2
src=$3
work=$4
cache=$5
rm -rf "$work"
mkdir -p "$work" "$cache"

skip() {
	echo "modules $system: SKIPPED: $*"
	exit 77
}

# unpack PACKAGE: the package's files under $cache/PACKAGE (once).
unpack() {
	root=$cache/$1
	if [ ! -d "$root/usr" ]; then
		(cd "$cache" && rm -f "$1"_*.deb && apt-get download "$1" >download.log 2>&1) ||
			skip "$1 is not installed and apt-get download $1 failed ($(tail -n 1 "$cache/download.log")): apt-get install $1, or run apt-get update"
		rm -rf "$root"
		dpkg-deb -x "$cache/$1"_*.deb "$root"
	fi
	echo "$root"
}

# init: shell code that defines `module` in a clean bash.
case $system in
lmod)
	if [ -r /usr/share/lmod/lmod/init/bash ]; then
		init=". /usr/share/lmod/lmod/init/bash"
		how="Lmod installed in /usr/share/lmod"
	else
		command -v lua5.3 >/dev/null 2>&1 ||
			skip "Lmod needs lua5.3, lua-posix, lua-filesystem, lua-term and lua-json (apt-get install them; scripts/install-deps does)"
		root=$(unpack lmod)
		lmod=$root/usr/share/lmod/lmod/libexec/lmod
		init="module() { eval \"\$(lua5.3 $lmod bash \"\$@\")\"; }"
		how="Lmod from the Debian package, unpacked in $root"
	fi
	want_file='/share/modulefiles/acp/[^/:]*\.lua$'
	;;
tcl)
	if [ -r /usr/share/modules/init/bash ]; then
		init=". /usr/share/modules/init/bash"
		how="Environment Modules installed in /usr/share/modules"
	else
		command -v tclsh8.6 >/dev/null 2>&1 || skip "Environment Modules needs tclsh8.6 (apt-get install tcl8.6)"
		root=$(unpack environment-modules)
		modulecmd=$(find "$root/usr/lib" -name modulecmd.tcl | head -n 1)
		[ -n "$modulecmd" ] || skip "no modulecmd.tcl in the environment-modules package"
		init="module() { eval \"\$(tclsh8.6 $modulecmd bash \"\$@\")\"; }"
		how="Environment Modules from the Debian package, unpacked in $root"
	fi
	want_file='/share/modulefiles/acp/[0-9.]*$'
	;;
*)
	echo "modules.sh: SYSTEM is lmod or tcl, not $system" >&2
	exit 2
	;;
esac
echo "modules $system: $how"

# A clean shell: only what a login on a fresh machine has.
cat >"$work/session.sh" <<EOF
set -eu
$init
cd "$work"
prefix=\$(cd "$prefix" && pwd -P)
fail() { echo "modules $system: FAIL: \$*"; exit 1; }
loaded_acps() { echo "\${LOADEDMODULES:-}" | tr : '\\n' | grep -c '^acp/' || true; }

module use "$prefix/share/modulefiles"
module load acp
case "\${_LMFILES_:-}" in
*/share/modulefiles/acp/*) ;;
*) fail "module load acp loaded nothing (_LMFILES_=\${_LMFILES_:-})" ;;
esac
echo "\$_LMFILES_" | grep -q '$want_file' || fail "$system loaded \$_LMFILES_, not its own kind of modulefile"
echo "loaded \$_LMFILES_"

[ "\$(cd "\$ACP_ROOT" && pwd -P)" = "\$prefix" ] || fail "ACP_ROOT is \$ACP_ROOT, not $prefix"
[ "\$(command -v acprun)" = "\$ACP_ROOT/bin/acprun" ] || fail "acprun on PATH is \$(command -v acprun)"
[ "\$(pkg-config --modversion acp)" = "@PROJECT_VERSION@" ] || fail "pkg-config finds acp \$(pkg-config --modversion acp 2>&1)"
case "\$MANPATH" in *:) ;; *) fail "MANPATH=\$MANPATH hides the system's manual pages (no empty element)" ;; esac
man -w acp_cas8 | grep -q "^\$ACP_ROOT/share/man/man3/acp_" || fail "man -w acp_cas8 gives \$(man -w acp_cas8 2>&1)"

# CPATH and LIBRARY_PATH: no flags at all.
cc -O2 "$src/tests/consumer/ring.c" -o ring -lacp
# LD_LIBRARY_PATH: the program has no rpath.
acprun -np 4 --timeout 60 ./ring >ring.out 2>&1 || { cat ring.out; fail "acprun -np 4 ./ring failed"; }
cat ring.out
[ "\$(grep -c 'of 4: ring ok' ring.out)" -eq 4 ] || fail "not every rank said ring ok"

# CMAKE_PREFIX_PATH: find_package(ACP) with no hint.
cmake -S "$src/tests/consumer" -B build -DACP_CONSUMER_FORTRAN=OFF >cmake.log 2>&1 || { cat cmake.log; fail "find_package(ACP) with the module's CMAKE_PREFIX_PATH failed"; }
grep "Found ACP" cmake.log

# Loading it again changes nothing; another version of acp replaces it
# (Lmod) or is refused (Environment Modules: conflict), never joins it.
module load acp
[ "\$(loaded_acps)" -eq 1 ] || fail "module load acp twice: LOADEDMODULES=\$LOADEDMODULES"
mkdir -p other/acp
for file in "\$prefix"/share/modulefiles/acp/*; do
	cp "\$file" "other/acp/\$(basename "\$file" | sed 's/^[0-9.]*[0-9]/9.9.9/')"
done
module use "$work/other"
module load acp/9.9.9 >other.out 2>&1 || true
[ "\$(loaded_acps)" -eq 1 ] || fail "acp/9.9.9 loaded beside the first: LOADEDMODULES=\$LOADEDMODULES"

module unload acp
[ -z "\${ACP_ROOT:-}" ] || fail "ACP_ROOT is still set after module unload acp"
[ -z "\${MANPATH:-}" ] || fail "MANPATH is \$MANPATH after module unload acp (unset before)"
case ":\$PATH:" in *":\$prefix/bin:"*) fail "PATH still has \$prefix/bin after module unload acp" ;; esac
echo "modules $system: ok"
EOF
sed -i "s|@PROJECT_VERSION@|$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/acp.pc")|" "$work/session.sh"
exec env -i HOME="$HOME" USER="${USER:-root}" PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb bash "$work/session.sh"
