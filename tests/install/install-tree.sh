#!/bin/sh
# install-tree.sh SOURCE WORK - what a newcomer does first: build libacp
# from SOURCE with the README's command into a fresh build directory and
# install it into a fresh prefix (WORK/build, WORK/prefix). The consumer
# tests then use WORK/prefix and nothing else.
set -eu
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
# An outer make's jobserver does not reach this make.
unset MAKEFLAGS MFLAGS MAKELEVEL
start=$(date +%s)
make -C "$src" install BUILD="$work/build" PREFIX="$work/prefix" >"$work/install.log" 2>&1 || {
	tail -n 40 "$work/install.log"
	echo "install-tree: make install failed; the whole log is $work/install.log"
	exit 1
}
echo "install-tree: built and installed into $work/prefix in $(($(date +%s) - start)) s:"
(cd "$work/prefix" && find . -type f -o -type l | sort | sed 's/^\.\//  /')
