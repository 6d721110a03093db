package bufpool

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// checkWindowLayout (Linux: windows need it) reads /proc/self/maps and checks file id's window
// place by place: a place the pool records as showing a slot is mapped
// read-only and shared at that slot's offset of the arena; every other
// place is reserved and inaccessible (private, no permissions), and no
// address of the window is unmapped, where another mapping could land.
func checkWindowLayout(t *testing.T, p *Pool, id FileID) {
	t.Helper()
	w := p.win
	w.mu.Lock()
	base, size := uintptr(w.bases[id]), uintptr(w.sizes[id])
	want := make(map[uintptr]int32) // place address → slot
	for k, s := range w.by {
		if k.file() == id {
			want[base+uintptr(k.index())*uintptr(w.frameSize)] = s
		}
	}
	w.mu.Unlock()
	if base == 0 {
		t.Fatalf("file %d has no window", id)
	}
	type region struct {
		start, end, off uintptr
		perms           string
	}
	var regions []region
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		lo, hi, _ := strings.Cut(fs[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(fs[2], 16, 64)
		if uintptr(end) > base && uintptr(start) < base+size {
			regions = append(regions, region{uintptr(start), uintptr(end), uintptr(off), fs[1]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	fsz := uintptr(w.frameSize)
	for a := base; a < base+size; a += fsz {
		var r *region
		for i := range regions {
			if regions[i].start <= a && a+fsz <= regions[i].end {
				r = &regions[i]
			}
		}
		place := fmt.Sprintf("file %d place %d (%#x)", id, (a-base)/fsz, a)
		slot, mapped := want[a]
		switch {
		case r == nil:
			t.Errorf("%s: not covered by one mapping (a hole, or split mid-frame): %+v", place, regions)
		case mapped && (r.perms != "r--s" || r.off+(a-r.start) != uintptr(slot)*fsz):
			t.Errorf("%s: want slot %d mapped r--s at offset %d, have %s at offset %d", place, slot, uintptr(slot)*fsz, r.perms, r.off+(a-r.start))
		case !mapped && r.perms != "---p":
			t.Errorf("%s: want a reserved gap (---p), have %s", place, r.perms)
		}
	}
}
