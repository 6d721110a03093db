package bufpool

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/ringstore/ringstore/ioengine"
	"golang.org/x/sys/unix"
)

// residentPages counts the pages of b that are in memory (mincore).
func residentPages(t *testing.T, b []byte) (resident, pages int) {
	t.Helper()
	pages = (len(b) + 4095) / 4096
	vec := make([]byte, pages)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, pages
}

func TestPrefault(t *testing.T) {
	for _, windows := range []bool{false, true} {
		for _, pre := range []bool{false, true} {
			t.Run(fmt.Sprintf("windows=%v/prefault=%v", windows, pre), func(t *testing.T) {
				p := newPool(t, newEngine(t, ioengine.URing, nil), Options{FrameSize: 64 << 10, Budget: 4 << 20, Windows: windows, Prefault: pre})
				got, pages := residentPages(t, p.arena)
				if pre && got != pages {
					t.Errorf("prefaulted arena: %d of %d pages resident", got, pages)
				}
				if !pre && got == pages {
					t.Errorf("arena without prefault: all %d pages resident already", pages)
				}
			})
		}
	}
}
