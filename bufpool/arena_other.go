//go:build !linux

package bufpool

func newSharedArena(size int) (int, []byte, error) { return -1, nil, errNoWindows }
func freeSharedArena(int, []byte) error            { return errNoWindows }

// prefault writes to each page of b.
func prefault(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// adviseHugePages does nothing where ringstore has no madvise.
func adviseHugePages([]byte) {}
