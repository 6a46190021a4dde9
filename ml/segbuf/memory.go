package segbuf

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// Block is a piece of registered memory outside the Go heap: peers read and
// write it with one-sided operations.
type Block struct {
	Ptr  unsafe.Pointer
	GA   core.GA
	Size uint64
}

// Bytes views the block as a slice.
func (b Block) Bytes() []byte { return unsafe.Slice((*byte)(b.Ptr), b.Size) }

// word returns the 8-byte word at off for atomic access.
func (b Block) word(off uint64) *uint64 { return (*uint64)(unsafe.Add(b.Ptr, off)) }

// memory hands out blocks of one size class each, recycling freed ones.
// Blocks come first from the part of the CL starter memory the mailbox
// leaves free: starter memory is what same-host transports map into peers,
// so a peer writes such a block with a plain memory copy. After that they
// come from slabs that are mmap'ed and registered once, so that an
// endpoint costs neither a system call nor a registration slot.
type memory struct {
	e        *core.Engine
	mu       sync.Mutex
	classes  map[uint64]*sizeClass
	slabs    []slab
	released bool

	starter   []byte  // free part of the CL starter memory
	starterGA core.GA // its GA
	bump      uint64  // bytes of it handed out
}

type sizeClass struct {
	size   uint64
	free   []Block
	nslabs int
}

type slab struct {
	mem []byte
	key core.GA
}

// blockAlign keeps every block 64-byte aligned: the low six bits of a
// block's GA are zero (GA offsets carry the address bits), so records can
// carry a tag there.
const blockAlign = 64

// maxBlocksPerSlab bounds slab growth: slabs of a class hold 1, 2, 4, ...
// blocks, so a process with one channel does not pay for sixteen.
const maxBlocksPerSlab = 16

func newMemory(e *core.Engine, starter []byte, ga core.GA) *memory {
	return &memory{e: e, classes: map[uint64]*sizeClass{}, starter: starter, starterGA: ga}
}

// alloc returns a zeroed block of at least size bytes.
func (m *memory) alloc(size uint64) (Block, error) {
	size = (size + blockAlign - 1) &^ (blockAlign - 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.released {
		return Block{}, fmt.Errorf("the communication library has stopped")
	}
	c := m.classes[size]
	if c == nil {
		c = &sizeClass{size: size}
		m.classes[size] = c
	}
	if len(c.free) == 0 && m.bump+size <= uint64(len(m.starter)) {
		off := m.bump
		m.bump += size
		return Block{Ptr: unsafe.Pointer(&m.starter[off]), GA: m.starterGA + core.GA(off), Size: size}, nil
	}
	if len(c.free) == 0 {
		if err := m.grow(c); err != nil {
			return Block{}, err
		}
	}
	b := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	return b, nil
}

func (m *memory) grow(c *sizeClass) error {
	n := uint64(1) << min(c.nslabs, 4)
	n = min(n, maxBlocksPerSlab)
	page := uint64(unix.Getpagesize())
	n = max(n, page/c.size)
	bytes := (n*c.size + page - 1) &^ (page - 1)
	mem, err := unix.Mmap(-1, 0, int(bytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("cannot map %d bytes for channel and segmented-buffer endpoints: %v", bytes, err)
	}
	key, err := m.e.Register(unsafe.Pointer(&mem[0]), bytes, 0)
	if err != nil {
		_ = unix.Munmap(mem)
		return fmt.Errorf("cannot register memory for channel and segmented-buffer endpoints: %v", err)
	}
	m.slabs = append(m.slabs, slab{mem: mem, key: key})
	c.nslabs++
	for i := uint64(0); i+c.size <= bytes; i += c.size {
		c.free = append(c.free, Block{Ptr: unsafe.Pointer(&mem[i]), GA: key + core.GA(i), Size: c.size})
	}
	return nil
}

// free zeroes a block and keeps it for the next alloc of its size. The
// caller guarantees that no peer accesses it any more.
func (m *memory) free(b Block) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.released {
		return // unmapped already
	}
	clear(b.Bytes())
	if c := m.classes[b.Size]; c != nil {
		c.free = append(c.free, b)
	}
}

// release unregisters and unmaps every slab (the layer stops).
func (m *memory) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.slabs {
		_ = m.e.Unregister(s.key)
		_ = unix.Munmap(s.mem)
	}
	m.slabs = nil
	m.classes = map[uint64]*sizeClass{}
	m.released = true
}
