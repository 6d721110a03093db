package directio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Alloc returns size bytes, rounded up to a multiple of BlockSize, of
// anonymous memory mapped with MAP_PRIVATE|MAP_ANONYMOUS. The memory is page
// aligned, zeroed, and outside the Go heap: the collector never moves or
// frees it, so it may be handed to the kernel for asynchronous I/O. It lives
// until Free; see the package documentation for the caveats.
//
// A size of zero or less is an error: there is no empty mapping to return
// or to free.
func Alloc(size int) ([]byte, error) {
	n, err := roundUp(size)
	if err != nil {
		return nil, err
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("directio: alloc of %d bytes: mmap: %w", n, err)
	}
	track(b)
	return b, nil
}

// Free unmaps b, which must be the full slice that Alloc returned. Any other
// slice, including one already freed, is an error wrapping ErrNotAllocated
// and is left alone. After Free returns nil, b and every slice of it are
// invalid: using them kills the process.
func Free(b []byte) error {
	return untrack(b, func(b []byte) error {
		if err := unix.Munmap(b); err != nil {
			return fmt.Errorf("directio: free of %d bytes: munmap: %w", len(b), err)
		}
		return nil
	})
}

// OpenFile opens path with flag|O_DIRECT|O_CLOEXEC, as os.OpenFile would.
//
// When the file system refuses O_DIRECT (open returns EINVAL) the error is a
// *NotSupportedError naming path and the file system type; errors.Is matches
// it against both ErrNotSupported and unix.EINVAL. Other errors wrap the
// *os.PathError from os.OpenFile.
//
// With O_CREAT, a file system that refuses O_DIRECT may leave the new empty
// file behind: Linux creates it before checking.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	// os.OpenFile retries on EINTR and adds O_CLOEXEC itself; it is named
	// here too so the contract does not rest on that.
	f, err := os.OpenFile(path, flag|unix.O_DIRECT|unix.O_CLOEXEC, perm)
	if err == nil {
		return f, nil
	}
	if errors.Is(err, unix.EINVAL) {
		return nil, notSupported("open", path, unix.EINVAL)
	}
	return nil, fmt.Errorf("directio: %w", err)
}

// errZeroDIOAlign explains a NotSupportedError from statx.
var errZeroDIOAlign = errors.New("statx reports a direct I/O alignment of 0")

// Discover returns the O_DIRECT alignment for the file or directory at path.
//
// It asks statx for STATX_DIOALIGN (Linux 6.1 and later, regular files on
// file systems that implement it). When the kernel reports it with zero
// values the file does not support O_DIRECT, and Discover returns a
// *NotSupportedError. When the kernel does not report it, Discover checks that
// a regular file opens with O_DIRECT at all, then uses the logical block size
// of the device under path (from sysfs, else BLKSSZGET) for both alignments,
// and when no device answers (tmpfs, overlayfs, network file systems)
// assumes BlockSize. Source says which of these gave the answer.
func Discover(path string) (Alignment, error) {
	var st unix.Statx_t
	err := ignoringEINTR(func() error {
		return unix.Statx(unix.AT_FDCWD, path, unix.AT_STATX_SYNC_AS_STAT, unix.STATX_TYPE|unix.STATX_DIOALIGN, &st)
	})
	if err == unix.ENOSYS || err == unix.EPERM {
		// No statx: Linux before 4.11, or a seccomp filter that predates
		// it. stat gives the type and device, which is all that is left
		// to ask.
		var s unix.Stat_t
		if err := ignoringEINTR(func() error { return unix.Stat(path, &s) }); err != nil {
			return Alignment{}, pathError("stat", path, err)
		}
		st = unix.Statx_t{
			Mask:      unix.STATX_TYPE,
			Mode:      uint16(s.Mode),
			Dev_major: unix.Major(uint64(s.Dev)),
			Dev_minor: unix.Minor(uint64(s.Dev)),
		}
	} else if err != nil {
		return Alignment{}, pathError("statx", path, err)
	}

	if st.Mask&unix.STATX_DIOALIGN != 0 {
		if st.Dio_mem_align == 0 || st.Dio_offset_align == 0 {
			return Alignment{}, notSupported("statx", path, errZeroDIOAlign)
		}
		return Alignment{Memory: st.Dio_mem_align, Offset: st.Dio_offset_align, Source: "statx"}, nil
	}

	if st.Mask&unix.STATX_TYPE != 0 && st.Mode&unix.S_IFMT == unix.S_IFREG {
		// The kernel did not say. Opening a regular file read-only has no
		// side effects and tells at least whether O_DIRECT works at all.
		// Other failures (EACCES, say) leave that open: the device may
		// still answer for the alignment.
		f, err := OpenFile(path, os.O_RDONLY, 0)
		if errors.Is(err, ErrNotSupported) {
			return Alignment{}, err
		}
		if err == nil {
			f.Close()
		}
	}
	return deviceAlignment(st.Dev_major, st.Dev_minor), nil
}

// deviceAlignment returns the logical block size of block device
// major:minor as both alignments, or assumed when it cannot be found. Direct
// I/O has always worked with buffers, offsets and lengths aligned to it.
func deviceAlignment(major, minor uint32) Alignment {
	if major == 0 {
		// An anonymous device (tmpfs, overlayfs, nfs, fuse, btrfs
		// subvolumes): there is no block device to ask.
		return assumed
	}
	// A partition has no queue directory of its own; its disk's is one
	// level up, and the kernel resolves the symlink before "..".
	dev := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
	for _, p := range []string{dev + "/queue/logical_block_size", dev + "/../queue/logical_block_size"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
		if err == nil && n > 0 {
			return Alignment{Memory: uint32(n), Offset: uint32(n), Source: "logical block size (sysfs)"}
		}
	}
	// No sysfs: ask the device node, where udev made one.
	fd, err := unix.Open(fmt.Sprintf("/dev/block/%d:%d", major, minor), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return assumed
	}
	defer unix.Close(fd)
	n, err := unix.IoctlGetInt(fd, unix.BLKSSZGET)
	if err != nil || n <= 0 {
		return assumed
	}
	return Alignment{Memory: uint32(n), Offset: uint32(n), Source: "logical block size (BLKSSZGET)"}
}

// Check proves that O_DIRECT works in dir and returns the alignment Discover
// finds for a file there. It creates a temporary file in dir, writes
// BlockSize bytes through the page cache, opens the file with O_DIRECT, reads
// those bytes back into memory from Alloc, writes a second block with
// O_DIRECT and reads it back too, verifying both, and removes the file.
//
// The errors name dir. When the file system refuses O_DIRECT, or requires an
// alignment that BlockSize does not satisfy, the error wraps ErrNotSupported;
// the Alignment is still returned in the second case.
func Check(dir string) (Alignment, error) {
	a, err := check(dir)
	if err != nil {
		return a, &checkError{dir: dir, err: err}
	}
	return a, nil
}

func check(dir string) (a Alignment, err error) {
	f, err := os.CreateTemp(dir, ".directio-check-*")
	if err != nil {
		return Alignment{}, err
	}
	name := f.Name()
	defer func() {
		if rerr := os.Remove(name); rerr != nil && err == nil {
			err = rerr
		}
	}()

	// Block 0 goes through the page cache. A direct read must still see
	// it: the kernel writes dirty cached pages back before it reads the
	// same range directly.
	want := make([]byte, BlockSize)
	fillPattern(want, 0)
	_, err = f.Write(want)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Alignment{}, err
	}

	a, err = Discover(name)
	if err != nil {
		return Alignment{}, err
	}
	if !a.fits() {
		return a, notSupported("discover", name, fmt.Errorf("alignment %s does not divide the block size %d", a, BlockSize))
	}

	df, err := OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return Alignment{}, err
	}
	defer func() {
		if cerr := df.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	buf, err := Alloc(2 * BlockSize)
	if err != nil {
		return Alignment{}, err
	}
	defer Free(buf)
	got, put := buf[:BlockSize], buf[BlockSize:]

	if err := readBlock(df, got, 0); err != nil {
		return Alignment{}, err
	}
	if !bytes.Equal(got, want) {
		return Alignment{}, fmt.Errorf("direct read of %s at offset 0 returned other bytes than were written", name)
	}

	fillPattern(put, 1)
	if _, err := df.WriteAt(put, BlockSize); err != nil {
		return Alignment{}, ioError("write", name, err)
	}
	clear(got)
	if err := readBlock(df, got, BlockSize); err != nil {
		return Alignment{}, err
	}
	if !bytes.Equal(got, put) {
		return Alignment{}, fmt.Errorf("direct read of %s at offset %d returned other bytes than were written", name, BlockSize)
	}
	return a, nil
}

// readBlock fills b from f at off.
func readBlock(f *os.File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if err != nil {
		return ioError("read", f.Name(), err)
	}
	if n != len(b) {
		return fmt.Errorf("direct read of %s at offset %d: %d of %d bytes", f.Name(), off, n, len(b))
	}
	return nil
}

// ioError turns EINVAL from a direct read or write, the kernel's answer to
// an alignment it does not accept, into a NotSupportedError.
func ioError(op, path string, err error) error {
	if errors.Is(err, unix.EINVAL) {
		return notSupported(op, path, unix.EINVAL)
	}
	return err
}

// fillPattern fills b with bytes that differ from block to block (seed) and
// from one offset to the next, so that a read of the wrong range shows.
func fillPattern(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*7 + i>>8 + seed*101 + 1)
	}
}

// FSType returns the name of the file system holding path, from statfs:
// "ext4" (also for ext2 and ext3, which share its magic), "xfs", "btrfs",
// "tmpfs", "overlayfs", "nfs", "fuse", "9p" and others, or the magic number
// in hex ("0x1234abcd") for one it does not know.
func FSType(path string) (string, error) {
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(path, &st) }); err != nil {
		return "", pathError("statfs", path, err)
	}
	// f_type is signed on some architectures; every magic fits 32 bits.
	magic := uint32(st.Type)
	if name, ok := fsNames[magic]; ok {
		return name, nil
	}
	return fmt.Sprintf("%#x", magic), nil
}

// fsNames maps statfs f_type magic numbers (include/uapi/linux/magic.h) to
// file system names.
var fsNames = map[uint32]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.BCACHEFS_SUPER_MAGIC:  "bcachefs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	0x2fc12fc1:                 "zfs", // not in magic.h: ZFS lives out of tree
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.RAMFS_MAGIC:           "ramfs",
	unix.HUGETLBFS_MAGIC:       "hugetlbfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.ECRYPTFS_SUPER_MAGIC:  "ecryptfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.CIFS_SUPER_MAGIC:      "cifs",
	unix.SMB2_SUPER_MAGIC:      "smb2",
	unix.CEPH_SUPER_MAGIC:      "ceph",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	unix.V9FS_MAGIC:            "9p",
	unix.SQUASHFS_MAGIC:        "squashfs",
	unix.EROFS_SUPER_MAGIC_V1:  "erofs",
	unix.ISOFS_SUPER_MAGIC:     "iso9660",
	unix.MSDOS_SUPER_MAGIC:     "vfat",
	unix.EXFAT_SUPER_MAGIC:     "exfat",
	0x5346544e:                 "ntfs",  // NTFS_SB_MAGIC, missing from x/sys
	0x7366746e:                 "ntfs3", // the ntfs3 driver's own magic
	unix.PROC_SUPER_MAGIC:      "proc",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
}

// notSupported returns a NotSupportedError for path, naming the file system
// that holds path or, when path does not exist, its directory.
func notSupported(op, path string, err error) error {
	fs, ferr := FSType(path)
	if ferr != nil {
		fs, ferr = FSType(filepath.Dir(path))
	}
	if ferr != nil {
		fs = ""
	}
	return &NotSupportedError{Op: op, Path: path, FSType: fs, Err: err}
}

// pathError wraps err with op and path, keeping the errno for errors.Is.
func pathError(op, path string, err error) error {
	return fmt.Errorf("directio: %w", &os.PathError{Op: op, Path: path, Err: err})
}

// ignoringEINTR calls fn until it returns something other than EINTR.
// statfs and statx can be interrupted by a signal on network and FUSE file
// systems, and the Go runtime sends signals (preemption, profiling) all the
// time; like package os, retry rather than fail.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
