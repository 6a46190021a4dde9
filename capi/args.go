package main

/*
#include <stddef.h>
*/
import "C"

import "unsafe"

// goArgs copies the C argument vector. A NULL argc or argv, or a count of
// 0, means there is nothing to parse.
func goArgs(argc *C.int, argv ***C.char) []string {
	if argc == nil || argv == nil || *argv == nil || *argc <= 0 {
		return nil
	}
	cargs := unsafe.Slice(*argv, int(*argc))
	args := make([]string, len(cargs))
	for i, p := range cargs {
		if p != nil {
			args[i] = C.GoString(p)
		}
	}
	return args
}

// rewriteArgs leaves in the caller's argv the arguments that survived option
// parsing: argv[0], then kept in order; it sets *argc and terminates the
// array with NULL (the original ACP did not, see spec Q-BL-17).
//
// kept is a subsequence of args[1:], so matching it greedily from the left
// keeps exactly the right contents in the right order, reusing the caller's
// own strings.
func rewriteArgs(argc *C.int, argv ***C.char, args, kept []string) {
	n := len(args)
	if n == 0 {
		return
	}
	cargs := unsafe.Slice(*argv, n)
	out, j := 1, 0
	for i := 1; i < n && j < len(kept); i++ {
		if args[i] == kept[j] {
			cargs[out] = cargs[i]
			out++
			j++
		}
	}
	// Only write NULL inside the n entries we were given: when nothing was
	// removed, argv[argc] is already NULL for main's argv, and a hand-built
	// array may have no slot there.
	if out < n {
		cargs[out] = nil
	}
	*argc = C.int(out)
}
