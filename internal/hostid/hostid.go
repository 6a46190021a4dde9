// Package hostid names the group of processes that can map each other's
// memory through /proc/<pid>/fd: one kernel boot, one host name, one PID
// namespace.
//
// The host name is part of it because a UTS namespace is how a machine is
// made into several hosts (tests do that). The PID namespace is part of it
// because a process id read in another namespace names a different
// process there, or the reader itself: containers that share the host's
// name and kernel but not its process ids (host networking, Kubernetes
// hostNetwork pods) would otherwise map the wrong memory.
package hostid

import (
	"crypto/sha256"
	"os"
	"strings"
)

// Size is the length of an ID.
const Size = 16

// ID returns this process's host identity: processes with equal IDs share
// a host for libacp.
func ID() [Size]byte {
	return Of(host(), bootID(), pidNamespace())
}

// InGroup is ID for a process of the given group (--acp-host-group):
// processes of one host in different groups act as on different hosts,
// and no group makes processes of different hosts one. "" is ID.
func InGroup(group string) [Size]byte {
	if group == "" {
		return ID()
	}
	return Of(host(), bootID(), pidNamespace()+"\x00group\x00"+group)
}

// Of is the identity of a host name, boot id and PID namespace.
func Of(host, boot, pidns string) [Size]byte {
	sum := sha256.Sum256([]byte(host + "\x00" + boot + "\x00" + pidns))
	return [Size]byte(sum[:Size])
}

func host() string {
	h, _ := os.Hostname()
	return h
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// pidNamespace is the namespace's identity as the kernel names it
// ("pid:[4026531836]"), or "" where /proc does not say.
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
