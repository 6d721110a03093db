package memtable

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ringstore/ringstore/directio"
)

// arena is a Memtable's memory: entries carved from chunks, each 8-byte
// aligned, and allocations of their own for keys and values over
// bigAlloc. Owned by the Memtable's writer, then by Release.
type arena struct {
	mapped bool   // chunks and allocations are mappings (else Go heap)
	cur    []byte // the current chunk's free space
	// chunks are the mapped chunks, given to the free list at release;
	// bigs the mapped allocations of their own, unmapped at release.
	chunks [][]byte
	bigs   [][]byte
	// heap keeps the Go-heap chunks and allocations reachable: the
	// collector does not see the pointers into them that nodes hold.
	heap [][]byte
}

// nodeRoom is the free space a chunk must have for an entry to start
// there: the whole node type, so that converting the entry's address to
// *node never reaches past the chunk (checkptr checks that).
const nodeRoom = int(unsafe.Sizeof(node{}))

// alloc returns size bytes (rounded up to 8) of the current chunk,
// 8-byte aligned, starting a new chunk when the current one has no room
// for them; took is what that cost: the rounded size, plus the unused
// tail of a chunk left behind.
func (a *arena) alloc(size int) (p unsafe.Pointer, took int64) {
	size = (size + 7) &^ 7
	if len(a.cur) < max(size, nodeRoom) {
		took = int64(len(a.cur))
		a.cur = a.newChunk()
	}
	p = unsafe.Pointer(unsafe.SliceData(a.cur))
	a.cur = a.cur[size:]
	return p, took + int64(size)
}

// newChunk returns a chunk: a free one, a new mapping, or, where there is
// no mapping, Go memory.
func (a *arena) newChunk() []byte {
	if a.mapped {
		if c := pool.get(); c != nil {
			a.chunks = append(a.chunks, c)
			return c
		}
	}
	c := make([]byte, chunkSize)
	a.heap = append(a.heap, c)
	return c
}

// allocBig returns n bytes of their own; took is what they cost (a
// mapping's whole pages).
func (a *arena) allocBig(n int) (b []byte, took int64) {
	if a.mapped {
		if m := mapMemory(roundPage(n)); m != nil {
			inUse.Add(int64(len(m)))
			a.bigs = append(a.bigs, m)
			return m[:n:n], int64(len(m))
		}
	}
	b = make([]byte, n)
	a.heap = append(a.heap, b)
	return b, int64(n)
}

// release gives the arena's memory back: chunks to the free list, the
// rest unmapped or left to the collector. The arena is empty after.
func (a *arena) release() {
	var unmap [][]byte
	if len(a.chunks) > 0 || len(a.bigs) > 0 {
		n := int64(len(a.chunks)) * chunkSize
		for _, b := range a.bigs {
			n += int64(len(b))
		}
		inUse.Add(-n)
		unmap = append(append(unmap, pool.put(a.chunks)...), a.bigs...)
	}
	if len(unmap) > 0 {
		unmapping.Add(1)
		go func() {
			defer unmapping.Done()
			for _, b := range unmap {
				unmapMemory(b)
			}
		}()
	}
	*a = arena{mapped: a.mapped}
}

// roundPage rounds n up to a multiple of the page size (4 KiB; a larger
// page only makes the mapping's length a request the kernel rounds up).
func roundPage(n int) int { return (n + 4095) &^ 4095 }

// maxFreeChunks bounds the free list without reservations: 8 MiB of
// chunks kept mapped for the next memtables, the rest unmapped.
const maxFreeChunks = (8 << 20) / chunkSize

// chunkPool is a free list of mapped chunks.
type chunkPool struct {
	mu       sync.Mutex
	free     [][]byte // at most maxFreeChunks + reserved
	reserved int      // chunks Reserve added to the bound
}

// Reserve raises the free list's bound by n bytes (rounded up to whole
// chunks) until the returned function is called, which lowers it again
// and unmaps what the list then holds past it. A store whose memtables
// are n bytes reserves n, so that the chunks of a memtable it releases are
// the next memtable's instead of being unmapped and mapped again (each
// page of a new mapping costs a fault and zeroing on first write): the
// process keeps up to one more memtable of each such store mapped.
func Reserve(n int64) (release func()) {
	if !offHeap || n <= 0 {
		return func() {}
	}
	k := int((n + chunkSize - 1) / chunkSize)
	pool.mu.Lock()
	pool.reserved += k
	pool.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { pool.unreserve(k) }) }
}

// unreserve lowers the bound by k chunks and unmaps those past it.
func (p *chunkPool) unreserve(k int) {
	p.mu.Lock()
	p.reserved -= k
	bound := maxFreeChunks + p.reserved
	var excess [][]byte
	if len(p.free) > bound {
		excess = append(excess, p.free[bound:]...)
		clear(p.free[bound:])
		p.free = p.free[:bound]
	}
	p.mu.Unlock()
	freeBytes.Add(-int64(len(excess)) * chunkSize)
	for _, c := range excess {
		unmapMemory(c)
	}
}

// pool is the process's free list.
var pool chunkPool

var (
	inUse         atomic.Int64   // mapped bytes held by memtables
	freeBytes     atomic.Int64   // mapped bytes on the free list
	mappedBytes   atomic.Int64   // bytes mapped, ever
	unmappedBytes atomic.Int64   // bytes unmapped, ever
	unmapping     sync.WaitGroup // unmaps in flight (tests wait for them)
)

// offHeap says New's memtables map their memory: on Linux, where
// directio.Alloc maps anonymous memory; elsewhere they take Go memory.
const offHeap = runtime.GOOS == "linux"

// mapMemory maps n bytes (a multiple of the page size) and counts them;
// nil when the kernel refuses.
func mapMemory(n int) []byte {
	b, err := directio.Alloc(n)
	if err != nil {
		return nil
	}
	mappedBytes.Add(int64(n))
	return b
}

// unmapMemory unmaps what mapMemory returned and counts it. Unmapping such
// a range cannot fail; if it did, the memory would stay mapped, which is
// only a leak.
func unmapMemory(b []byte) {
	_ = directio.Free(b)
	unmappedBytes.Add(int64(len(b)))
}

// get returns a chunk from the free list, the one released last, or a new
// mapping; nil when mapping fails.
func (p *chunkPool) get() []byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		freeBytes.Add(-chunkSize)
		inUse.Add(chunkSize)
		return c
	}
	p.mu.Unlock()
	c := mapMemory(chunkSize)
	if c != nil {
		inUse.Add(chunkSize)
	}
	return c
}

// put adds chunks to the free list as far as it has room and returns
// those it had none for.
func (p *chunkPool) put(chunks [][]byte) (excess [][]byte) {
	p.mu.Lock()
	k := max(0, min(len(chunks), maxFreeChunks+p.reserved-len(p.free)))
	p.free = append(p.free, chunks[:k]...)
	p.mu.Unlock()
	freeBytes.Add(int64(k) * chunkSize)
	return chunks[k:]
}

// MemoryStats is the memtables' mapped memory, process-wide.
type MemoryStats struct {
	InUse int64 // bytes of chunks and allocations held by memtables not released
	Free  int64 // bytes of released chunks kept mapped for reuse
	// Mapped and Unmapped count the bytes mapped and unmapped since the
	// process started: their difference is InUse plus Free plus what is
	// being unmapped; their growth is the churn the free list did not
	// absorb.
	Mapped, Unmapped int64
}

// ReadMemoryStats returns the process's memtable memory off the Go heap
// (zero where memtables live on the Go heap). The counters are read one
// after another, not at one instant.
func ReadMemoryStats() MemoryStats {
	return MemoryStats{InUse: inUse.Load(), Free: freeBytes.Load(), Mapped: mappedBytes.Load(), Unmapped: unmappedBytes.Load()}
}
