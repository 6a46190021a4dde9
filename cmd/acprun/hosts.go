package main

import (
	"context"
	"net"
	"os"
	"strings"
	"time"
)

// isLocalHost tells whether a host named in -host or a machine file is this
// machine: a loopback name or address, this host's name, or a name that
// resolves to one of this machine's addresses.
func isLocalHost(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	switch h {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return true
	}
	if ip := net.ParseIP(h); ip != nil {
		return isLocalIP(ip)
	}
	if me, err := os.Hostname(); err == nil {
		me = strings.ToLower(me)
		short := func(s string) string { s, _, _ = strings.Cut(s, "."); return s }
		if h == me || short(h) == short(me) {
			return true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, h)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !isLocalIP(ip) {
			return false
		}
	}
	return true
}

func isLocalIP(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
