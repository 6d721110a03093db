package arrowscan

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ringstore/ringstore/directio"
)

// bodyPool recycles the memory of record batch bodies. Every body buffer a
// Scanner hands to arrow-go has a bodyRef as its memory.Allocator: when
// arrow-go releases the last reference to a body (the record and every
// array sliced from it are released), its Free puts the memory back here
// for the next batch. Bodies are either Go heap memory (pread, pool copies) or
// 4 KiB-aligned off-heap memory from directio.Alloc (direct), which is
// freed with directio.Free once the pool is closed or full.
//
// Safe for concurrent use: arrow-go may release a record on any goroutine.
type bodyPool struct {
	aligned bool
	keep    int // most free bodies kept; immutable

	mu     sync.Mutex
	free   [][]byte // guarded by mu; full-capacity slices
	closed bool     // guarded by mu
	live   int      // guarded by mu; bodies handed out and not yet freed
}

var _ memory.Allocator = (*bodyRef)(nil)

func newBodyPool(aligned bool, keep int) *bodyPool {
	return &bodyPool{aligned: aligned, keep: keep}
}

// get returns a body of n bytes (n > 0), reusing freed memory when a free
// body is large enough.
func (p *bodyPool) get(n int) ([]byte, error) {
	p.mu.Lock()
	var victim []byte
	for i := len(p.free) - 1; i >= 0; i-- {
		b := p.free[i]
		if cap(b) >= n {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.live++
			p.mu.Unlock()
			return b[:n], nil
		}
	}
	if len(p.free) > 0 && len(p.free) >= p.keep {
		// Too small for n and the list is full: drop the smallest-looking one.
		victim = p.free[0]
		p.free = p.free[1:]
	}
	p.mu.Unlock()
	if victim != nil {
		p.release(victim)
	}
	var b []byte
	if p.aligned {
		var err error
		if b, err = directio.Alloc(n); err != nil {
			return nil, err
		}
	} else {
		b = make([]byte, n)
	}
	p.mu.Lock()
	p.live++
	p.mu.Unlock()
	return b[:n], nil
}

func (p *bodyPool) release(b []byte) {
	if p.aligned {
		// Free only fails for memory Alloc did not return, which would be
		// a bug here; nothing can be done about it at this point.
		_ = directio.Free(b[:cap(b)])
	}
}

// put returns a body obtained from get.
func (p *bodyPool) put(b []byte) {
	b = b[:cap(b)]
	p.mu.Lock()
	p.live--
	if !p.closed && len(p.free) < p.keep {
		p.free = append(p.free, b)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.release(b)
}

// close frees the free bodies; bodies still held by records are freed
// when arrow-go releases them.
func (p *bodyPool) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, b := range free {
		p.release(b)
	}
}

// newBody wraps b (from get) as a body buffer that returns to p when
// arrow-go releases it.
func (p *bodyPool) newBody(b []byte) (*memory.Buffer, *bodyRef) {
	ref := &bodyRef{pool: p, buf: b}
	return memory.NewBufferWithAllocator(b, ref), ref
}

// bodyRef is the allocator of one body buffer: its Free returns the body
// to the pool once, however often it is called. The Scanner also calls
// Free itself when arrow-go fails to decode a batch, because arrow-go's
// panic paths can drop a body without releasing every slice of it.
type bodyRef struct {
	pool  *bodyPool
	buf   []byte
	freed atomic.Bool
}

func (r *bodyRef) Allocate(size int) []byte { return make([]byte, size) }
func (r *bodyRef) Reallocate(size int, b []byte) []byte {
	nb := make([]byte, size)
	copy(nb, b)
	return nb
}
func (r *bodyRef) Free([]byte) {
	if !r.freed.Swap(true) {
		r.pool.put(r.buf)
	}
}
