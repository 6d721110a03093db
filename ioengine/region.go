package ioengine

import (
	"errors"
	"fmt"
	"sync"
)

// MaxRegisteredChunk is the most bytes one registered buffer of the kernel
// may span (1 GiB); RegisterMemory registers larger memory as consecutive
// chunks of this size. A request whose buffer crosses a chunk boundary is
// issued as a plain read or write.
const MaxRegisteredChunk = 1 << 30

// registeredChunk is MaxRegisteredChunk; tests make it small.
var registeredChunk = MaxRegisteredChunk

// ErrNoRegisteredMemory is what RegisterMemory returns on a backend that
// has no registered buffers (the syscall backend).
var ErrNoRegisteredMemory = errors.New("ioengine: the backend has no registered buffers")

// Region is memory registered with an engine's io_uring (Engine.
// RegisterMemory). While it is registered, every read or write whose
// buffer lies wholly inside one of its chunks is issued as IORING_OP_READ_FIXED
// or WRITE_FIXED: the kernel pinned the pages once at registration instead of
// pinning and unpinning them for every request.
type Region struct {
	e   *Engine
	mem []byte // immutable
	on  bool   // guarded by e.regMu: still registered
}

// Len returns the region's length in bytes.
func (r *Region) Len() int { return len(r.mem) }

// RegisterMemory registers mem with the engine's ring for fixed reads and
// writes. mem must be memory outside the Go heap (an mmap, package directio)
// and must stay mapped until Unregister returns: the kernel holds its pages
// pinned, and unmapping it while registered would leave a fixed read writing
// to the old pages. The pages count against RLIMIT_MEMLOCK unless the process
// has CAP_IPC_LOCK.
//
// Registration is refused, and nothing changes, where the kernel refuses it
// (ENOMEM past RLIMIT_MEMLOCK, EOPNOTSUPP for file-backed memory on kernels
// before 6.5, EFAULT), on the syscall backend (ErrNoRegisteredMemory), and on
// a closed engine. The error says why; the caller's requests then run as
// plain reads and writes, with identical results.
func (e *Engine) RegisterMemory(mem []byte) (*Region, error) {
	if len(mem) == 0 {
		return nil, fmt.Errorf("ioengine: register memory: the region is empty")
	}
	if e.closed.Load() {
		return nil, ErrClosed
	}
	e.regMu.Lock()
	defer e.regMu.Unlock()
	start := addrOf(mem)
	for _, o := range e.regions {
		ostart := addrOf(o.mem)
		if start < ostart+uintptr(len(o.mem)) && ostart < start+uintptr(len(mem)) {
			return nil, fmt.Errorf("ioengine: register memory: %d bytes at %#x overlap the %d registered at %#x", len(mem), start, len(o.mem), ostart)
		}
	}
	r := &Region{e: e, mem: mem, on: true}
	if err := e.backend.setRegions(regionChunks(append(e.regions, r))); err != nil {
		// The kernel may have dropped the previous set before it refused
		// the new one: put the previous set back (nothing new is pinned).
		if len(e.regions) > 0 {
			if rerr := e.backend.setRegions(regionChunks(e.regions)); rerr != nil {
				err = fmt.Errorf("%w (and registering the %d earlier regions again failed, so they are read without registration: %v)", err, len(e.regions), rerr)
			}
		}
		return nil, fmt.Errorf("ioengine: register %d bytes of memory: %w", len(mem), err)
	}
	e.regions = append(e.regions, r)
	return r, nil
}

// Unregister drops the registration: later requests in the region run as
// plain reads and writes. Requests in flight finish first. A second call
// returns nil.
func (r *Region) Unregister() error {
	e := r.e
	e.regMu.Lock()
	defer e.regMu.Unlock()
	if !r.on {
		return nil
	}
	r.on = false
	rest := make([]*Region, 0, len(e.regions))
	for _, o := range e.regions {
		if o != r {
			rest = append(rest, o)
		}
	}
	e.regions = rest
	if e.closed.Load() {
		return nil // Close released the ring and its registrations
	}
	if err := e.backend.setRegions(regionChunks(rest)); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("ioengine: unregister %d bytes of memory: %w", len(r.mem), err)
	}
	return nil
}

// regionChunks splits the regions into the buffers the kernel registers,
// each at most MaxRegisteredChunk bytes, in order.
func regionChunks(regions []*Region) [][]byte {
	var chunks [][]byte
	for _, r := range regions {
		for b := r.mem; len(b) > 0; {
			n := min(len(b), registeredChunk)
			chunks = append(chunks, b[:n:n])
			b = b[n:]
		}
	}
	return chunks
}

// fixedChunk is one registered buffer: [start, end) of the address space,
// registered at index idx.
type fixedChunk struct {
	start, end uintptr
	idx        uint16
}

// fixedTable maps the registered buffers of a ring; the zero value has
// none.
type fixedTable struct {
	chunks []fixedChunk
}

func newFixedTable(chunks [][]byte) fixedTable {
	t := fixedTable{chunks: make([]fixedChunk, len(chunks))}
	for i, c := range chunks {
		s := addrOf(c)
		t.chunks[i] = fixedChunk{start: s, end: s + uintptr(len(c)), idx: uint16(i)}
	}
	return t
}

// lookup returns the index of the registered buffer that holds all of b.
func (t *fixedTable) lookup(b []byte) (uint16, bool) {
	if len(t.chunks) == 0 || len(b) == 0 {
		return 0, false
	}
	s := addrOf(b)
	e := s + uintptr(len(b))
	for i := range t.chunks {
		if c := &t.chunks[i]; s >= c.start && e <= c.end {
			return c.idx, true
		}
	}
	return 0, false
}

// regionState is the engine's registered memory.
type regionState struct {
	regMu   sync.Mutex
	regions []*Region // guarded by regMu: what the backend has registered, in registration order
}
