package memtable

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/kv/internal/base"
)

// isMapped reports whether [p, p+n) is mapped: mincore fails with ENOMEM
// on a range that is not.
func isMapped(p uintptr, n int) bool {
	vec := make([]byte, (n+4095)/4096)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, p, uintptr(n), uintptr(unsafe.Pointer(&vec[0])))
	return errno == 0
}

// TestUnmapsPastTheBound: chunks the free list has no room for and
// allocations of their own are unmapped; those it keeps stay mapped.
func TestUnmapsPastTheBound(t *testing.T) {
	unmapping.Wait()
	before := ReadMemoryStats()
	var ms []*Memtable
	var chunks []uintptr
	var want int64 // bytes to unmap: the allocations of their own, and chunks past the bound
	for range 3 {
		m := New()
		fill(m, 1, (maxFreeChunks/2)*chunkSize/300, 200, 'x')
		m.Add(1<<20, base.KindSet, []byte("big"), make([]byte, 3*bigAlloc))
		ms = append(ms, m)
		chunks = append(chunks, chunkStarts(m)...)
		want += int64(roundPage(len("big") + 3*bigAlloc))
	}
	want += int64(len(chunks))*chunkSize - (maxFreeChunks*chunkSize - before.Free)
	for _, m := range ms {
		m.Release()
	}
	unmapping.Wait()
	after := ReadMemoryStats()
	if got := after.Unmapped - before.Unmapped; got != want {
		t.Fatalf("unmapped %d bytes, want %d", got, want)
	}
	if after.Free != maxFreeChunks*chunkSize || after.InUse != before.InUse {
		t.Fatalf("after the releases %+v, before %+v", after, before)
	}
	if after.Mapped-after.Unmapped != after.InUse+after.Free {
		t.Fatalf("%+v: mapped less unmapped is not in use plus free", after)
	}
	pool.mu.Lock()
	kept := map[uintptr]bool{}
	for _, c := range pool.free {
		kept[uintptr(unsafe.Pointer(unsafe.SliceData(c)))] = true
	}
	pool.mu.Unlock()
	for _, c := range chunks {
		// The address of an unmapped chunk may have been mapped again by
		// then (the race detector's runtime maps memory of its own), so only
		// the kept chunks are looked at.
		if kept[c] && !isMapped(c, chunkSize) {
			t.Fatalf("chunk %#x on the free list is not mapped", c)
		}
	}
}

// TestStaleBytesUnderWriteBarrier fills chunks with words that are
// addresses of freed Go heap memory, releases them, and builds memtables
// in them while collections run one after another: a pointer store's
// write barrier reads the slot's old value as a pointer, and one of those
// would make the runtime throw ("found bad pointer in Go heap") had the
// node's pointer words not been cleared first.
func TestStaleBytesUnderWriteBarrier(t *testing.T) {
	// Addresses in spans the collector has freed.
	var freed []uintptr
	for range 64 {
		b := make([]byte, 256<<10)
		freed = append(freed, uintptr(unsafe.Pointer(&b[0]))+4096)
	}
	runtime.GC()
	runtime.GC()
	stale := make([]byte, 0, 8*len(freed))
	for _, p := range freed {
		stale = binary.LittleEndian.AppendUint64(stale, uint64(p))
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for round := range 20 {
		junk := New()
		for i := range 2000 {
			// 8-aligned words: the value starts right after its 8-byte key,
			// at an 8-aligned offset from the node.
			junk.Add(uint64(i+1), base.KindSet, fmt.Appendf(nil, "j%07d", i), stale[:8*(1+i%len(freed))])
		}
		junk.Release()
		m := New()
		for i := range 20000 {
			m.Add(uint64(i+1), base.KindSet, fmt.Appendf(nil, "k%07d", i*7919%20000), []byte("v"))
		}
		if m.Len() != 20000 {
			t.Fatalf("round %d: Len %d", round, m.Len())
		}
		m.Release()
	}
}

// TestReserveKeepsAMemtableMapped: with a reservation the size of a
// memtable, a released memtable's chunks all stay on the free list and
// the next memtable of that size maps nothing new; giving the reservation
// back unmaps what the list holds past its bound.
func TestReserveKeepsAMemtableMapped(t *testing.T) {
	unmapping.Wait()
	const size = 4 * maxFreeChunks * chunkSize // four times the bound without a reservation
	release := Reserve(size)
	m := New()
	fill(m, 1, size/300, 200, 'x')
	n := len(m.arena.chunks)
	if n <= maxFreeChunks {
		t.Fatalf("the memtable took %d chunks, no more than the bound without a reservation", n)
	}
	m.Release()
	unmapping.Wait()
	before := ReadMemoryStats()
	if before.Free < int64(n)*chunkSize {
		t.Fatalf("%d bytes on the free list after the release, want at least the memtable's %d", before.Free, int64(n)*chunkSize)
	}
	m2 := New()
	fill(m2, 1, size/300, 200, 'y')
	if got := ReadMemoryStats(); got.Mapped != before.Mapped {
		t.Fatalf("the next memtable mapped %d bytes anew, want none", got.Mapped-before.Mapped)
	}
	m2.Release()
	unmapping.Wait()
	release()
	release() // a second call changes nothing
	after := ReadMemoryStats()
	if after.Free > maxFreeChunks*chunkSize {
		t.Fatalf("%d bytes on the free list after the reservation went, more than the bound of %d", after.Free, maxFreeChunks*chunkSize)
	}
	if after.Mapped-after.Unmapped != after.InUse+after.Free {
		t.Fatalf("%+v: mapped less unmapped is not in use plus free", after)
	}
	pool.mu.Lock()
	reserved := pool.reserved
	pool.mu.Unlock()
	if reserved != 0 {
		t.Fatalf("%d chunks still reserved", reserved)
	}
}
