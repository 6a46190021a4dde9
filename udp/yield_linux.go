package udp

import "golang.org/x/sys/unix"

// osYield gives the CPU to another runnable thread while spinning.
func osYield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
