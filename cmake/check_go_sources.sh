#!/bin/sh
# check_go_sources.sh SOURCE_DIR GO
#
# The build re-links libacp and acprun when a file they are made from
# changes, and acp_info too; CMakeLists.txt and cmake/acp_info.cmake name
# the directories (acp_go_sources). This checks that every package of this
# module the three are built from lies in a directory named there, so that
# an edit is never left out of a build.
set -u
src=$1 go=$2
cd "$src" || exit 1
module=$("$go" list -m) || exit 1
status=0
check() { # go package, variable in CMakeLists.txt or cmake/*.cmake
  listed=$(sed -n "s/^ *acp_go_sources($2 \(.*\))/\1/p" CMakeLists.txt cmake/*.cmake | head -1)
  [ -n "$listed" ] || { echo "check_go_sources: no acp_go_sources($2 ...) in CMakeLists.txt or cmake/"; status=1; return; }
  for dir in $("$go" list -deps "$1" | sed -n "s|^$module/\([^/]*\).*|\1|p" | sort -u); do
    case " $listed " in
    *" $dir "* | *" $dir/"*) ;;
    *) echo "check_go_sources: $1 is built from $dir/, which acp_go_sources($2 ...) does not list"; status=1 ;;
    esac
  done
}
check ./capi ACP_LIBRARY_SOURCES
[ -d cmd/acprun ] && check ./cmd/acprun ACPRUN_SOURCES
[ -d cmd/acp_info ] && check ./cmd/acp_info ACP_INFO_SOURCES
[ $status -eq 0 ] && echo "check_go_sources: ok"
exit $status
