package ib

import (
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// These tests need no RDMA device.

// openWithoutDevice opens the transport the way the engine does.
func openWithoutDevice(t *testing.T, kv ...string) error {
	s := coretest.NewSettings(t, "ib", kv...)
	_, err := core.New(core.Config{Settings: s, Exchanger: coretest.NewGroup(2).Member(0)})
	return err
}

func TestNoDeviceIsAClearError(t *testing.T) {
	saved := sysfsDevices
	defer func() { sysfsDevices = saved }()
	sysfsDevices = func() []string { return nil }

	err := openWithoutDevice(t)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ib: no usable RDMA device")
	assert.Contains(t, err.Error(), "/sys/class/infiniband")
	assert.Contains(t, err.Error(), "rdma link add", "says how to get a device")

	_, _, err = discover("", "", t.Logf)
	assert.True(t, errors.Is(err, errNoDevice))
}

func TestKernelDeviceWithoutVerbsDevice(t *testing.T) {
	if len(sysfsDevices()) > 0 {
		t.Skip("this host has RDMA devices")
	}
	saved := sysfsDevices
	defer func() { sysfsDevices = saved }()
	sysfsDevices = func() []string { return []string{"ghost0"} }
	_, _, err := discover("", "", t.Logf)
	require.Error(t, err)
	if loadVerbs() != nil {
		assert.Contains(t, err.Error(), "libibverbs1", "names the package to install")
		return
	}
	assert.True(t, errors.Is(err, errNoDevice), "%v", err)
}

func TestDeviceSetting(t *testing.T) {
	specs, err := parseDeviceSetting(" mlx5_0:1, mlx5_1 ,")
	require.NoError(t, err)
	assert.Equal(t, []portSpec{{"mlx5_0", 1}, {"mlx5_1", 0}}, specs)
	for _, bad := range []string{"mlx5_0:x", "mlx5_0:0", ":1", "a:300"} {
		_, err := parseDeviceSetting(bad)
		assert.Error(t, err, bad)
		if err != nil {
			assert.Contains(t, err.Error(), "ACP_IB_DEVICE")
		}
	}
	s := coretest.NewSettings(t, "ib")
	assert.Equal(t, "", s.String("ib-device"))
	assert.Equal(t, 1024, s.Int("ib-key-cache"))
}

func gid4(a, b, c, d byte) [16]byte {
	var g [16]byte
	g[10], g[11], g[12], g[13], g[14], g[15] = 0xff, 0xff, a, b, c, d
	return g
}

func TestChooseGID(t *testing.T) {
	linkLocal := [16]byte{0xfe, 0x80, 15: 1}
	netdevs := map[string][]net.IP{"eth0": {net.IPv4(10, 77, 0, 1).To4()}}
	table := []gidEntry{
		{index: 0, gid: linkLocal, typ: gidTypeRoCEv1, netdev: "eth0"},
		{index: 1, gid: linkLocal, typ: gidTypeRoCEv2, netdev: "eth0"},
		{index: 2, gid: gid4(10, 77, 0, 1), typ: gidTypeRoCEv1, netdev: "eth0"},
		{index: 3, gid: gid4(192, 168, 9, 9), typ: gidTypeRoCEv2, netdev: "eth1"},
		{index: 4, gid: gid4(10, 77, 0, 1), typ: gidTypeRoCEv2, netdev: "eth0"},
	}
	g, why, err := chooseGID(table, -1, netdevs)
	require.NoError(t, err)
	assert.Equal(t, 4, g.index, "RoCE v2 with the netdev's own IPv4 address")
	assert.Contains(t, why, "RoCE v2")

	g, _, err = chooseGID(table[:4], -1, netdevs)
	require.NoError(t, err)
	assert.Equal(t, 3, g.index, "then RoCE v2 with any IPv4-mapped address")

	g, _, err = chooseGID(table[:3], -1, netdevs)
	require.NoError(t, err)
	assert.Equal(t, 1, g.index, "then any RoCE v2 GID")

	g, _, err = chooseGID(table[:1], -1, netdevs)
	require.NoError(t, err)
	assert.Equal(t, 0, g.index, "then RoCE v1")

	g, _, err = chooseGID(table, 2, netdevs)
	require.NoError(t, err)
	assert.Equal(t, 2, g.index, "a forced index wins")

	_, _, err = chooseGID(table, 9, netdevs)
	assert.ErrorContains(t, err, "ACP_IB_GID_INDEX")
	_, _, err = chooseGID(nil, -1, netdevs)
	assert.ErrorContains(t, err, "GID table is empty")
}

func TestKeyCacheIsBoundedAndRevocable(t *testing.T) {
	var k keyCache
	k.init(16)
	assert.Nil(t, k.get(1, 3), "nothing is allocated or found before the first key")
	assert.Nil(t, k.e)
	for peer := 0; peer < 100; peer++ {
		k.put(rkey{peer: int32(peer), seg: 3, serial: 1, key: uint32(peer)})
	}
	assert.Len(t, k.e, 16, "the cache never grows")
	assert.NotZero(t, k.evicted)
	last := k.get(99, 3)
	require.NotNil(t, last)
	assert.Equal(t, uint32(99), last.key)

	k.drop(99, 3, 0)
	assert.NotNil(t, k.get(99, 3), "revoking an older registration keeps a newer key")
	k.drop(99, 3, 1)
	assert.Nil(t, k.get(99, 3), "revoked")
}

func TestWireRoundTrip(t *testing.T) {
	b := make([]byte, msgSize)
	rep := keyReply{status: core.StatusOK, color: 1, seg: 77, serial: 9, rkey: 0xabcdef, base: 1 << 40, size: 4096, offBase: 16}
	m := encodeKeyRep(b, rep)
	assert.True(t, validLen(m))
	assert.Equal(t, rep, decodeKeyRep(m))
	rep.readOnly = true
	assert.Equal(t, rep, decodeKeyRep(encodeKeyRep(b, rep)), "a key of a registration for reads only")
	assert.True(t, validLen(encodeAtomicReq(b, 5, core.OpCas8, 0x1234, 1, 2)))
	assert.True(t, validLen(encodeAtomicRep(b, 5, core.StatusOK, 3)))
	assert.True(t, validLen(encodeKeyReq(b, 3, 0x99)))
	assert.True(t, validLen(encodeInval(b, mInval, 3, 4)))
	assert.False(t, validLen(b[:3]))
	for typ, request := range map[byte]bool{mCtrl: true, mAtomicReq: true, mAtomicRep: false, mKeyReq: true, mKeyRep: false, mInval: true, mInvalAck: false} {
		assert.Equal(t, request, isRequest(typ), "message type %d", typ)
	}

	h := hello{jobKey: 42, from: 1, to: 2, path: 0, info: qpInfo{lid: 7, mtu: 3, linkLayer: 2, qpn: 0x11, psn: 0x22, gid: gid4(1, 2, 3, 4)}}
	h.info.starters[2] = starterKey{base: 0x7f0000000000, size: 10240, offBase: 0, rkey: 5}
	got, err := decodeHello(h.encode())
	require.NoError(t, err)
	assert.Equal(t, h, got)
	_, err = decodeHello(make([]byte, helloLen))
	assert.ErrorContains(t, err, "not an ACP ib handshake")
}

func TestRegistrationErrorNamesTheLimit(t *testing.T) {
	err := regError(syscall.ENOMEM, 1<<40, "registration")
	assert.Contains(t, err.Error(), "ulimit -l")
	assert.Contains(t, err.Error(), "1099511627776 bytes")
	assert.Regexp(t, `needs at least \d+ KiB`, err.Error())
	err = regError(syscall.EFAULT, 1<<40, "registration")
	assert.Contains(t, err.Error(), "mapped")
}

// An 8-byte fetch-and-add or compare-and-swap goes to the adapters only
// when both ends' devices report IBV_ATOMIC_GLOB: the owner's adapter
// executes it, and every other atomic on that word is a CPU atomic of the
// owner. In a mixed job a rank with such a device still sends its atomics
// to an owner without one, whose CPU executes them. The owner's
// capability comes with its address record.
func TestAtomicPathNeedsBothEnds(t *testing.T) {
	glob, hca := encodeAddress(net.ParseIP("10.77.0.2"), 4242, true, false), encodeAddress(net.ParseIP("10.77.0.3"), 4343, false, false)
	ip, port := decodeAddress(glob)
	assert.Equal(t, "10.77.0.2", ip.String())
	assert.Equal(t, 4242, port)
	assert.True(t, peerAtomicGlob(glob))
	assert.False(t, peerAtomicGlob(hca))
	assert.False(t, peerAtomicGlob(make([]byte, addressBytes)), "a process without the transport")

	l, err := core.NewLayout(4, 1)
	require.NoError(t, err)
	book := core.AddressBook{RecSize: addressBytes}
	for _, rec := range [][]byte{glob, hca, glob, make([]byte, addressBytes)} {
		book.Data = append(book.Data, rec...)
	}
	for _, c := range []struct {
		mine  bool
		owner int
		op    core.AtomicOp
		want  opKind
	}{
		{true, 0, core.OpAdd8, opNICAtomic},
		{true, 0, core.OpCas8, opNICAtomic},
		{true, 2, core.OpAdd8, opNICAtomic},
		{true, 0, core.OpAdd4, opCPUAtomic}, // no such verb
		{true, 0, core.OpCas4, opCPUAtomic},
		{true, 0, core.OpSwap8, opCPUAtomic},
		{true, 0, core.OpXor8, opCPUAtomic},
		{true, 1, core.OpAdd8, opCPUAtomic}, // the owner's adapter is not atomic with its CPU
		{true, 1, core.OpCas8, opCPUAtomic},
		{true, 3, core.OpAdd8, opCPUAtomic},
		{false, 0, core.OpAdd8, opCPUAtomic}, // ours is not
		{false, 1, core.OpCas8, opCPUAtomic},
	} {
		e := &endpoint{paths: []*path{{dev: &device{atomicGlob: c.mine}}}, layout: l, book: book}
		target := l.Encode(c.owner, 0, core.SegStarter, 64)
		assert.Equal(t, c.want, e.atomicKind(c.owner, c.op, target), "op %d, ours GLOB %v, owner rank %d", c.op, c.mine, c.owner)
		assert.Equal(t, c.want == opNICAtomic, nicAtomic(c.op, c.mine, peerAtomicGlob(book.At(c.owner))))
		e.forceNIC = true
		want := c.op == core.OpAdd8 || c.op == core.OpCas8
		assert.Equal(t, want, e.atomicKind(c.owner, c.op, target) == opNICAtomic, "forced, op %d", c.op)
	}
}

// --acp-ib-atomics travels in the address record; processes that chose
// differently are refused at start-up, naming the rank and the setting.
// A process without the transport has no say.
func TestAtomicsModeMustAgree(t *testing.T) {
	ip := net.ParseIP("10.77.0.2")
	cpu, nic := encodeAddress(ip, 1, false, false), encodeAddress(ip, 2, true, true)
	assert.False(t, peerNICAll(cpu))
	assert.True(t, peerNICAll(nic))
	assert.True(t, peerAtomicGlob(nic), "the flags are independent")
	book := func(recs ...[]byte) core.AddressBook {
		b := core.AddressBook{RecSize: addressBytes}
		for _, r := range recs {
			b.Data = append(b.Data, r...)
		}
		return b
	}
	rankOf := func(p int) int { return p + 10 }
	require.NoError(t, checkAtomicsMode(book(nic, nic, nic), true, rankOf))
	require.NoError(t, checkAtomicsMode(book(cpu, cpu), false, rankOf))
	err := checkAtomicsMode(book(nic, nic, cpu), true, rankOf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 12 runs with --acp-ib-atomics cpu, this process with nic")
	assert.Contains(t, err.Error(), "ACP_IB_ATOMICS")
	err = checkAtomicsMode(book(cpu, nic), false, rankOf)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 11 runs with --acp-ib-atomics nic")
	absent := book(nic, make([]byte, addressBytes))
	absent.Absent = []bool{false, true}
	require.NoError(t, checkAtomicsMode(absent, true, rankOf))

	s := coretest.NewSettings(t, "ib")
	assert.Equal(t, "cpu", s.String("ib-atomics"))
	assert.Error(t, s.Set("ib-atomics", "fast", "test"), "only cpu and nic")
}

// The Go side's key cache and the C side's copy of it put a key in the
// same slot: a key evicted from one is evicted from the other, and a key
// the C side refused is offered again when the Go side resolves it.
func TestKeySlotsAgreeWithC(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 1024, 4096, 1 << 20} {
		k := keyCache{}
		k.init(n)
		for i := range 20000 {
			peer, seg := rng.IntN(1<<22), rng.IntN(1<<12)
			if i < 64 {
				peer, seg = i, i%5
			}
			require.Equal(t, k.slot(peer, seg), cKeySlot(n, peer, seg), "slot of peer %d, segment %d among %d", peer, seg, n)
		}
	}
}

// What the Go side publishes to the C side's tables arrives whole: a key
// of a peer's registration for reads only and our own registration for
// reads only carry the flag there (the C side then leaves writes into
// them, and reads into ours, to the Go side, which fails them), and
// writable ones do not.
func TestFastTablesCarryReadOnly(t *testing.T) {
	e := &endpoint{}
	e.keys.init(64)
	free := e.bareFast(64)
	defer free()
	for i, ro := range []bool{true, false} {
		peer, seg := 3+i, core.SegFirstUser+i
		e.keys.put(rkey{peer: int32(peer), seg: int32(seg), serial: 1, key: 77, base: 1 << 20, size: 4096, readOnly: ro})
		k := e.keys.get(peer, seg)
		e.fastKeyPut(k)
		require.True(t, k.inFast, "the C side took the key")
		lr := &localRegion{r: &core.Region{Seg: seg}, base: 1 << 21, size: 4096, lkeys: []uint32{5}, rkeys: []uint32{6}, readOnly: ro}
		e.fastLocal(lr, true)
		key, keyRO, reg, regRO := e.fastEntries(peer, seg)
		assert.True(t, key && reg, "entries published (read-only %v)", ro)
		assert.Equal(t, ro, keyRO, "the key's read-only flag")
		assert.Equal(t, ro, regRO, "the registration's read-only flag")
	}
}
