package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// findProgram finds the program as the shell would, in $PATH unless its
// name holds a slash. A program found through a relative entry of $PATH
// ("." say) is run too, by its absolute path: the user put that entry
// there, and the shell runs it (Go's exec refuses it by default, lest a
// file in the current directory stand in for a command).
func findProgram(name string) (string, error) {
	path, err := exec.LookPath(name)
	if errors.Is(err, exec.ErrDot) {
		return filepath.Abs(path)
	}
	return path, err
}

// execFailure says why the program could not be started. The kernel
// reports a missing interpreter (the #! line of a script, or the dynamic
// loader of a program built for another system) as the program itself
// missing; that interpreter is named instead.
func execFailure(path string, err error) error {
	err = unwrapExec(err)
	if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	if _, serr := os.Stat(path); serr != nil {
		return err
	}
	if interp, isLoader := interpreterOf(path); isLoader {
		return fmt.Errorf("its dynamic loader %s was not found (was it built for another system?)", interp)
	} else if interp != "" {
		return fmt.Errorf("its interpreter %s, named on its #! line, was not found", interp)
	}
	return err
}

// interpreterOf returns the program the kernel runs path with: the
// dynamic loader of a program (isLoader), the interpreter on the #! line
// of a script, or "" if none is named.
func interpreterOf(path string) (interp string, isLoader bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if e, err := elf.NewFile(f); err == nil {
		for _, p := range e.Progs {
			if p.Type == elf.PT_INTERP {
				b, _ := io.ReadAll(p.Open())
				return strings.TrimRight(string(b), "\x00"), true
			}
		}
		return "", false
	}
	line, _ := bufio.NewReader(io.NewSectionReader(f, 0, 256)).ReadString('\n')
	if fields := strings.Fields(strings.TrimPrefix(line, "#!")); strings.HasPrefix(line, "#!") && len(fields) > 0 {
		return fields[0], false
	}
	return "", false
}

// unwrapExec drops exec's repetition of the program name.
func unwrapExec(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
