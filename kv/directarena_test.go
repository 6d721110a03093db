package kv

import (
	"testing"

	"github.com/ringstore/ringstore/directio"
)

// TestDirectArenaRuns: the arena hands out runs first fit, across the
// bitmap's words, never one page twice; a freed run is handed out again, a
// lost one never.
func TestDirectArenaRuns(t *testing.T) {
	a := &directArena{mem: make([]byte, directArenaBytes)}
	const page = directio.BlockSize
	take := func(n, wantPage int) {
		t.Helper()
		b, p, pages, ok := a.alloc(n)
		switch {
		case wantPage < 0 && ok:
			t.Fatalf("alloc(%d) = page %d, want none free", n, p)
		case wantPage < 0:
		case !ok:
			t.Fatalf("alloc(%d): none free, want page %d", n, wantPage)
		case p != wantPage || pages != (n+page-1)/page || len(b) != pages*page || &b[0] != &a.mem[p*page]:
			t.Fatalf("alloc(%d) = page %d, %d pages, %d bytes; want page %d", n, p, pages, len(b), wantPage)
		}
	}
	take(1, 0)        // page 0
	take(60*page, 1)  // 1..60
	take(10*page, 61) // 61..70: crosses the first word
	take(0, -1)       // nothing asked, nothing given
	take(directArenaBytes, -1)
	a.free(1, 60)
	take(61*page, 71) // the hole at 1..60 is one page short
	take(60*page, 1)  // first fit: the hole
	a.lose(10)        // 61..70 failed: never handed out again
	a.free(0, 1)
	take(page, 0)
	if n := a.lost(); n != 10 {
		t.Fatalf("lost() = %d, want 10", n)
	}
	// Fill the rest: 132 pages are out or lost, 380 left.
	take(380*page, 132)
	take(page, -1)
	a.free(132, 380)
	a.free(0, 1)
	a.free(1, 60)
	a.free(71, 61)
	if a.out != 0 || a.lost() != 10 {
		t.Fatalf("all freed: %d pages out, %d lost; want 0 and 10", a.out, a.lost())
	}
	take(442*page, -1) // the lost pages 61..70 split the arena: 61 and 441 free
	take(441*page, 71)
	take(61*page, 0)
}
