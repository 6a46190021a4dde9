package boot

import (
	"net"
	"os"
)

// The PMI-1 and PMIx rungs talk to a local server, so no connection of
// theirs shows which network reaches the other hosts. When the job spans
// hosts they offer this host's address instead; on one host they offer
// none, and the transports use the loopback interface (which also allows
// the largest datagrams). --acp-udp-addr overrides either choice.

// ipForJob is what LocalIP returns for a job that is, or is not, on this
// host only.
func ipForJob(oneHost bool) string {
	if oneHost {
		return ""
	}
	return hostIPv4()
}

// hostIPv4 is an IPv4 address of this host that other hosts can probably
// reach: the one the host name resolves to if a local interface has it,
// else the first non-loopback address of an interface that is up; "" if
// there is none.
func hostIPv4() string {
	local := map[string]bool{}
	var first string
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() == nil || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			ip := ipn.IP.To4().String()
			local[ip] = true
			if first == "" {
				first = ip
			}
		}
	}
	if name, err := os.Hostname(); err == nil {
		if ips, err := net.LookupIP(name); err == nil {
			for _, ip := range ips {
				if v4 := ip.To4(); v4 != nil && local[v4.String()] {
					return v4.String()
				}
			}
		}
	}
	return first
}
