package kv

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// directArenaBytes is the memory a store on io_uring registers for its
// reads past the cache: two full 1 MiB rounds (maxOverflowBytes), half of
// a read ahead's most (maxAheadBytes), or many smaller calls. A call that finds no run free
// reads into Go memory, as on the syscall backend.
const directArenaBytes = 2 << 20

const directArenaPages = directArenaBytes / directio.BlockSize

// directArena is memory outside the Go heap, registered with the store's
// engine (ioengine.Engine.RegisterMemory), that reads past the cache go
// into: a read whose buffer lies in it is issued as READ_FIXED, so the
// kernel pins no page per read. A call takes a run of pages (first fit over
// a bitmap) and gives it back at release. The pages of a call whose read
// failed are never handed out again: a ring that failed may not have
// finished with them.
//
// Concurrency: alloc, free and lose take mu; close runs once, after every
// read of the store.
type directArena struct {
	mem    []byte           // immutable: directio.Alloc
	region *ioengine.Region // immutable

	mu   sync.Mutex
	used [directArenaPages / 64]uint64 // guarded by mu: pages handed out or lost
	out  int                           // guarded by mu: pages handed out, not lost
}

// newDirectArena maps and registers the arena on eng. It returns why not
// where the kernel refuses the registration (RLIMIT_MEMLOCK) or the
// engine has no registered buffers.
func newDirectArena(eng *ioengine.Engine) (*directArena, error) {
	if eng.Backend() != ioengine.BackendURing {
		return nil, ioengine.ErrNoRegisteredMemory
	}
	mem, err := directio.Alloc(directArenaBytes)
	if err != nil {
		return nil, err
	}
	region, err := eng.RegisterMemory(mem)
	if err != nil {
		return nil, errors.Join(err, directio.Free(mem))
	}
	return &directArena{mem: mem, region: region}, nil
}

// alloc returns a run of pages of at least n bytes, its first page and
// length in pages, or ok false when no run that long is free.
func (a *directArena) alloc(n int) (b []byte, page, pages int, ok bool) {
	pages = (n + directio.BlockSize - 1) / directio.BlockSize
	if pages == 0 || pages > directArenaPages {
		return nil, 0, 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	run := 0
	for p := 0; p < directArenaPages; p++ {
		w := a.used[p/64]
		if p%64 == 0 && w == ^uint64(0) {
			run = 0
			p += 63
			continue
		}
		if w&(1<<(p%64)) != 0 {
			run = 0
			continue
		}
		if run++; run == pages {
			page = p - pages + 1
			a.mark(page, pages, true)
			a.out += pages
			at := page * directio.BlockSize
			return a.mem[at : at+pages*directio.BlockSize : at+pages*directio.BlockSize], page, pages, true
		}
	}
	return nil, 0, 0, false
}

// free gives back a run alloc handed out.
func (a *directArena) free(page, pages int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mark(page, pages, false)
	a.out -= pages
}

// lose keeps a run alloc handed out from ever being handed out again.
func (a *directArena) lose(pages int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out -= pages
}

// mark sets or clears the bits of pages [page, page+pages). a.mu held.
func (a *directArena) mark(page, pages int, set bool) {
	for p := page; p < page+pages; {
		w, lo := p/64, p%64
		k := min(64-lo, page+pages-p)
		m := (^uint64(0) >> (64 - k)) << lo
		if set {
			a.used[w] |= m
		} else {
			a.used[w] &^= m
		}
		p += k
	}
}

// lost returns the pages kept from reuse by failed reads.
func (a *directArena) lost() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, w := range a.used {
		n += bits.OnesCount64(w)
	}
	return n - a.out
}

// close unregisters the arena (the engine lets the fixed reads in flight
// finish first) and unmaps it, unless a call still holds pages: a read
// that raced Close may yet look at its blocks, so that memory stays mapped.
func (a *directArena) close() error {
	err := a.region.Unregister()
	a.mu.Lock()
	out := a.out
	a.mu.Unlock()
	if out == 0 {
		err = errors.Join(err, directio.Free(a.mem))
	}
	if err != nil {
		return fmt.Errorf("kv: the memory for reads past the cache: %w", err)
	}
	return nil
}
