package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/libacp/libacp/boot"
)

// roleVar makes the test binary play a rank instead of running the tests.
const roleVar = "ACPRUN_TEST_ROLE"

// playRank is a rank's main program; it returns the exit status.
func playRank(role string) int {
	rank := os.Getenv("ACP_MYRANK")
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "rank %s: %v\n", rank, err)
		return 1
	}
	if role == "env" {
		printEnv(rank)
		return 0
	}
	if role == "early" && rank == "1" {
		return 0 // ends before it joins, as a program that exits before acp_init
	}
	b, err := boot.Open(optionsFromEnv())
	if err != nil {
		return fail(err)
	}
	switch role {
	case "allgather", "early":
		if err := checkAllGather(b); err != nil {
			return fail(err)
		}
		if err := b.Close(); err != nil {
			return fail(err)
		}
		fmt.Println("ok")
		return 0
	case "abort":
		if b.Rank() == 1 {
			b.Abort(7, "out of cheese")
			time.Sleep(30 * time.Second) // acprun stops us
			return 0
		}
		return fail(b.Barrier())
	case "vanish":
		if b.Rank() == 2 {
			return 0 // exit without Close, as a program that skips acp_finalize
		}
		return fail(b.Barrier())
	}
	return fail(fmt.Errorf("unknown role %q", role))
}

// optionsFromEnv does what acp_init does with acprun's variables.
func optionsFromEnv() boot.Options {
	rank, rankErr := strconv.Atoi(os.Getenv("ACP_MYRANK"))
	n, nErr := strconv.Atoi(os.Getenv("ACP_NPROCS"))
	return boot.Options{
		Rank: rank, NProcs: n, RankSet: rankErr == nil && nErr == nil,
		Addr: os.Getenv("ACP_BOOTSTRAP_ADDR"), Key: os.Getenv("ACP_JOB_KEY"),
		Timeout: 20 * time.Second,
	}
}

func checkAllGather(b boot.Bootstrap) error {
	rec := binary.LittleEndian.AppendUint64(nil, uint64(1000+b.Rank()))
	all, err := b.AllGather(rec)
	if err != nil {
		return err
	}
	for p := range b.Size() {
		if got := binary.LittleEndian.Uint64(all[8*p:]); got != uint64(1000+p) {
			return fmt.Errorf("record %d is %d, want %d", p, got, 1000+p)
		}
	}
	return b.Barrier()
}

// printEnv prints "RANK NAME=VALUE" for the ACP_* variables, the program's
// arguments, and whether the job key appears on the command line of this
// process or of acprun.
func printEnv(rank string) {
	var lines []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ACP_") {
			lines = append(lines, kv)
		}
	}
	lines = append(lines, "ARGS="+strings.Join(os.Args[1:], "|"))
	onCmdline := "no"
	key := []byte(os.Getenv("ACP_JOB_KEY"))
	for _, p := range []string{"/proc/self/cmdline", fmt.Sprintf("/proc/%d/cmdline", os.Getppid())} {
		if b, err := os.ReadFile(p); err != nil || len(key) == 0 || bytes.Contains(b, key) {
			onCmdline = "yes"
		}
	}
	lines = append(lines, "KEY_ON_A_COMMAND_LINE="+onCmdline)
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Printf("%s %s\n", rank, l)
	}
}
