package kvbench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/bench"
)

// readProcIO returns read_bytes of /proc/self/io: bytes this process had
// fetched from the device.
func readProcIO() (int64, error) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("read_bytes: ")); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, fmt.Errorf("no read_bytes in /proc/self/io")
}

func maxRSS() (int64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return ru.Maxrss << 10, nil
}

// dropCacheSystem is how the whole machine's page cache is dropped.
const dropCacheSystem = "sync, then 3 written to /proc/sys/vm/drop_caches (the whole machine's page cache, dentries and inodes)"

// dropCacheFiles is how one database's files are dropped when the
// machine's cache cannot be.
const dropCacheFiles = "posix_fadvise(POSIX_FADV_DONTNEED) on every file of the database"

// dropSystemCache drops the machine's page cache (root only).
func dropSystemCache() error {
	unix.Sync()
	f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString("3")
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write /proc/sys/vm/drop_caches: %w", werr)
	}
	return cerr
}

// dropFiles fadvises every regular file under dir out of the page cache
// and returns the bytes of them still resident afterwards (mincore).
func dropFiles(dir string) (resident int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return &os.PathError{Op: "fadvise DONTNEED", Path: p, Err: err}
		}
		n, err := bench.ResidentBytes(f)
		resident += n
		return err
	})
	return resident, err
}
