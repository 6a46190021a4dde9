#!/bin/sh
# lint-man-pages.sh page... - every man page must pass mandoc's lint (style
# level and up) and groff's warnings without a single message. Exit 77
# (skipped) when neither tool is installed (Debian: mandoc, groff-base).
set -u
status=0
tools=0
if command -v mandoc >/dev/null 2>&1; then
	tools=$((tools + 1))
	# mandoc's own base-system checks ("Mdocdate missing", operating system
	# names) are about BSD pages; -W warning keeps what matters to us.
	out=$(mandoc -T lint -W warning "$@" 2>&1)
	if [ -n "$out" ]; then
		printf '%s\n' "$out"
		status=1
	fi
	echo "mandoc -T lint -W warning: $# pages checked"
fi
if command -v groff >/dev/null 2>&1; then
	tools=$((tools + 1))
	for page in "$@"; do
		out=$(groff -man -ww -z -Tutf8 "$page" 2>&1)
		if [ -n "$out" ]; then
			printf '%s: %s\n' "$page" "$out"
			status=1
		fi
	done
	echo "groff -man -ww: $# pages checked"
fi
if [ "$tools" -eq 0 ]; then
	echo "neither mandoc nor groff is installed (apt-get install mandoc groff-base): man pages not checked"
	exit 77
fi
exit $status
