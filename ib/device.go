package ib

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/Mellanox/rdmamap"
)

// path is one usable port of one device: a colour. GAs of colour i are
// reached through paths[i] on every process.
type path struct {
	index     int
	dev       *device
	port      int
	name      string // "rxe0:1"
	linkLayer int
	lid       int
	mtu       int // IBV_MTU_* of the port
	maxMsg    uint32
	gidIndex  int
	gid       [16]byte
	netdev    string // RoCE: the Ethernet device the GID belongs to
}

func (p *path) roce() bool { return p.linkLayer == linkLayerEthernet }

// device is one open verbs device with the resources its connections share.
type device struct {
	index      int
	name       string
	v          *vdev
	atomicGlob bool // NIC atomics are atomic with respect to the CPU's
	maxRd      int  // outstanding RDMA reads and atomics per QP, as initiator
	maxDestRd  int  // ... as responder
	inline     uint32
	chanFD     int
	asyncFD    int
}

// errNoDevice wraps the "nothing to use here" outcomes of discovery.
var errNoDevice = errors.New("no usable RDMA device")

// portSpec is one element of --acp-ib-device: a device and optionally a port.
type portSpec struct {
	dev  string
	port int // 0: every active port
}

func parseDeviceSetting(v string) ([]portSpec, error) {
	var out []portSpec
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, port, hasPort := strings.Cut(f, ":")
		s := portSpec{dev: name}
		if hasPort {
			p, err := strconv.Atoi(port)
			if err != nil || p < 1 || p > 255 {
				return nil, fmt.Errorf("--acp-ib-device / ACP_IB_DEVICE: %q: the port after ':' must be a number 1..255", f)
			}
			s.port = p
		}
		if name == "" {
			return nil, fmt.Errorf("--acp-ib-device / ACP_IB_DEVICE: %q has no device name", f)
		}
		out = append(out, s)
	}
	return out, nil
}

// sysfsDevices lists the RDMA devices the kernel knows. Checking this
// first keeps hosts without RDMA from loading libibverbs and its providers
// on every acp_init.
var sysfsDevices = rdmamap.GetRdmaDeviceList

// discover opens the devices and chooses the paths named by the settings
// (every active port of every device when spec is empty).
func discover(spec, gidSetting string, logf func(string, ...any)) ([]*path, []*device, error) {
	if len(sysfsDevices()) == 0 {
		return nil, nil, fmt.Errorf("%w: the kernel lists no RDMA device (%s is empty or missing); load the driver of the adapter, or create a Soft-RoCE device (rdma link add rxe0 type rxe netdev eth0)",
			errNoDevice, rdmamap.RdmaClassDir)
	}
	specs, err := parseDeviceSetting(spec)
	if err != nil {
		return nil, nil, err
	}
	gidIndex := -1
	if g := strings.TrimSpace(gidSetting); g != "" {
		n, err := strconv.Atoi(g)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("--acp-ib-gid-index / ACP_IB_GID_INDEX %q is not a GID table index (0, 1, ...)", gidSetting)
		}
		gidIndex = n
	}
	if err := loadVerbs(); err != nil {
		return nil, nil, err
	}
	names, err := deviceNames()
	if errors.Is(err, syscall.ENOSYS) {
		return nil, nil, fmt.Errorf("%w: %v: the kernel offers no verbs interface (load ib_uverbs and the adapter's driver)", errNoDevice, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%w: libibverbs found no device although the kernel lists %s; is the user-space provider installed (ibverbs-providers)?",
			errNoDevice, strings.Join(sysfsDevices(), ", "))
	}
	sort.Strings(names)
	if len(specs) == 0 {
		for _, n := range names {
			specs = append(specs, portSpec{dev: n})
		}
	}
	for _, s := range specs {
		if !contains(names, s.dev) {
			return nil, nil, fmt.Errorf("--acp-ib-device / ACP_IB_DEVICE names device %q, which this host does not have (devices: %s)", s.dev, strings.Join(names, ", "))
		}
	}

	var paths []*path
	var devs []*device
	var skipped []string
	fail := func(err error) ([]*path, []*device, error) {
		for _, d := range devs {
			closeDevice(d.v)
		}
		return nil, nil, err
	}
	byName := map[string]*device{}
	for _, s := range specs {
		d := byName[s.dev]
		if d == nil {
			v, err := openDevice(s.dev)
			if err != nil {
				return fail(fmt.Errorf("device %s: %v", s.dev, err))
			}
			d = &device{index: len(devs), name: s.dev, v: v, atomicGlob: int(v.atomic_cap) == atomicGlob,
				maxRd: max(1, min(int(v.max_qp_init_rd_atom), 16)), maxDestRd: max(1, min(int(v.max_qp_rd_atom), 16))}
			byName[s.dev] = d
			devs = append(devs, d)
		}
		ports := []int{s.port}
		if s.port == 0 {
			ports = ports[:0]
			for p := 1; p <= int(d.v.phys_port_cnt); p++ {
				ports = append(ports, p)
			}
		} else if s.port > int(d.v.phys_port_cnt) {
			return fail(fmt.Errorf("--acp-ib-device / ACP_IB_DEVICE: %s has %d port(s), not %d", s.dev, d.v.phys_port_cnt, s.port))
		}
		for _, port := range ports {
			a, err := queryPort(d.v, port)
			if err != nil {
				return fail(fmt.Errorf("%s: %v", s.dev, err))
			}
			name := fmt.Sprintf("%s:%d", s.dev, port)
			if a.state != portActive {
				if s.port != 0 {
					return fail(fmt.Errorf("%w: port %s named by --acp-ib-device / ACP_IB_DEVICE is not active (state %s); check the cable and the subnet manager (ibstat, rdma link)",
						errNoDevice, name, portStateText(a.state)))
				}
				skipped = append(skipped, fmt.Sprintf("%s is %s", name, portStateText(a.state)))
				continue
			}
			p := &path{index: len(paths), dev: d, port: port, name: name, linkLayer: a.linkLayer,
				lid: a.lid, mtu: a.activeMTU, maxMsg: a.maxMsg}
			if p.roce() {
				entries, err := gidTable(d.v, port, max(a.gidTableLen, 1))
				if err != nil && gidIndex < 0 {
					return fail(fmt.Errorf("%s: %v", name, err))
				}
				g, why, err := chooseGID(entries, gidIndex, netdevsOf(d.name))
				if err != nil {
					if gidIndex >= 0 {
						// An explicit index the table cannot confirm: trust it.
						g = gidEntry{index: gidIndex}
						g.gid, err = queryGID(d.v, port, gidIndex)
					}
					if err != nil {
						return fail(fmt.Errorf("%s: %v", name, err))
					}
				}
				p.gidIndex, p.gid, p.netdev = g.index, g.gid, g.netdev
				logf("ib: %s (RoCE, netdev %s): GID index %d %s: %s", name, orNone(g.netdev), g.index, net.IP(g.gid[:]), why)
			} else {
				if a.lid == 0 {
					skipped = append(skipped, fmt.Sprintf("%s has no LID (is a subnet manager running?)", name))
					continue
				}
				p.gidIndex = 0
				logf("ib: %s (InfiniBand): LID %d", name, a.lid)
			}
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return fail(fmt.Errorf("%w: no active port (%s); check the links (ibstat, rdma link) or choose a port with --acp-ib-device / ACP_IB_DEVICE",
			errNoDevice, strings.Join(skipped, "; ")))
	}
	// Close devices none of whose ports is used.
	used := devs[:0]
	for _, d := range devs {
		keep := false
		for _, p := range paths {
			keep = keep || p.dev == d
		}
		if keep {
			d.index = len(used)
			used = append(used, d)
		} else {
			closeDevice(d.v)
		}
	}
	return paths, used, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func portStateText(s int) string {
	switch s {
	case 1:
		return "DOWN"
	case 2:
		return "INIT"
	case 3:
		return "ARMED"
	case 4:
		return "ACTIVE"
	case 5:
		return "ACTIVE_DEFER"
	}
	return "state " + strconv.Itoa(s)
}

// netdevsOf maps the Ethernet devices that belong to an RDMA device (the
// kernel pairs them: rdmamap reads that pairing) to their IPv4 addresses.
func netdevsOf(rdmaDev string) map[string][]net.IP {
	out := map[string][]net.IP{}
	ifs, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, ifi := range ifs {
		if d, err := rdmamap.GetRdmaDeviceForNetdevice(ifi.Name); err != nil || d != rdmaDev {
			continue
		}
		var ips []net.IP
		if addrs, err := ifi.Addrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
					ips = append(ips, n.IP.To4())
				}
			}
		}
		out[ifi.Name] = ips
	}
	return out
}

// gidEntry is one valid entry of a port's GID table.
type gidEntry struct {
	index   int
	gid     [16]byte
	typ     int // gidTypeIB, gidTypeRoCEv1, gidTypeRoCEv2
	ifindex int
	netdev  string
}

// chooseGID picks the GID a RoCE port sends from. RoCE v2 (routable UDP
// encapsulation) with the IPv4-mapped address of an IPv4 address that the
// port's own netdev carries is what peers on other hosts can reach; RoCE v2
// with another IPv4-mapped address, then any RoCE v2 GID (IPv6, link-local:
// one L2 segment), then RoCE v1 are fall-backs. A forced index (>= 0) must
// exist in the table. netdevs are the port's Ethernet devices and their
// IPv4 addresses. It returns the entry and why it was chosen.
func chooseGID(entries []gidEntry, forced int, netdevs map[string][]net.IP) (gidEntry, string, error) {
	for i := range entries {
		if entries[i].netdev == "" && entries[i].ifindex > 0 {
			if ifi, err := net.InterfaceByIndex(entries[i].ifindex); err == nil {
				entries[i].netdev = ifi.Name
			}
		}
	}
	if forced >= 0 {
		for _, e := range entries {
			if e.index == forced {
				return e, "set by --acp-ib-gid-index / ACP_IB_GID_INDEX", nil
			}
		}
		return gidEntry{}, "", fmt.Errorf("GID index %d (--acp-ib-gid-index / ACP_IB_GID_INDEX) is not a valid entry of the GID table", forced)
	}
	if len(entries) == 0 {
		return gidEntry{}, "", errors.New("the GID table is empty: give the netdev an IP address, or set --acp-ib-gid-index / ACP_IB_GID_INDEX")
	}
	best, rank := -1, 99
	consider := func(i, r int) {
		if r < rank {
			best, rank = i, r
		}
	}
	for i, e := range entries {
		ip4 := net.IP(e.gid[:]).To4()
		v4mapped := ip4 != nil && isV4Mapped(e.gid)
		switch {
		case e.typ == gidTypeRoCEv2 && v4mapped && ownsIP(netdevs, e.netdev, ip4):
			consider(i, 0)
		case e.typ == gidTypeRoCEv2 && v4mapped:
			consider(i, 1)
		case e.typ == gidTypeRoCEv2:
			consider(i, 2)
		case e.typ == gidTypeRoCEv1:
			consider(i, 3)
		default:
			consider(i, 4)
		}
	}
	reasons := []string{
		"RoCE v2 with an IPv4 address of the port's netdev",
		"RoCE v2, IPv4-mapped (not an address of the port's netdev)",
		"RoCE v2 without an IPv4 address (reaches one Ethernet segment only)",
		"RoCE v1 (no RoCE v2 GID: reaches one Ethernet segment only)",
		"first entry (no RoCE GID type)",
	}
	return entries[best], reasons[rank], nil
}

func isV4Mapped(g [16]byte) bool {
	for _, b := range g[:10] {
		if b != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}

func ownsIP(netdevs map[string][]net.IP, netdev string, ip net.IP) bool {
	for name, ips := range netdevs {
		if netdev != "" && name != netdev {
			continue
		}
		for _, x := range ips {
			if x.Equal(ip) {
				return true
			}
		}
	}
	return false
}
