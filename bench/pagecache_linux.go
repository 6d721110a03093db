package bench

// The only unsafe code of the package: mincore(2), which x/sys/unix does not
// wrap on Linux, needs the addresses of the mapping and of the vector.

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ResidentBytes counts the bytes of f that are in the page cache (mincore
// over read-only mappings of the file, 256 MiB at a time).
func ResidentBytes(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size == 0 {
		return 0, nil
	}
	page := int64(os.Getpagesize())
	const window = 256 << 20 // map a window at a time: no need for address space the size of the file
	var resident int64
	vec := make([]byte, window/page)
	for off := int64(0); off < size; off += window {
		n := min(window, size-off)
		m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
		}
		pages := (n + page - 1) / page
		err = mincore(m, vec[:pages])
		unix.Munmap(m)
		if err != nil {
			return 0, &os.PathError{Op: "mincore", Path: f.Name(), Err: err}
		}
		for i, v := range vec[:pages] {
			if v&1 != 0 {
				resident += min(page, n-int64(i)*page)
			}
		}
	}
	return resident, nil
}

// mincore fills vec with one byte per page of the mapping m (bit 0 set when
// the page is resident). vec must have at least one byte per page of m; m
// must be a whole mapping from unix.Mmap (page-aligned).
func mincore(m, vec []byte) error {
	if len(m) == 0 {
		return nil
	}
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}
