package kv

import "golang.org/x/sys/unix"

// dropPageCache asks the kernel to drop the page cache of the file behind
// fd (clean pages go at once; the call does not flush dirty ones). kv reads
// its tables with O_DIRECT through its own block cache, so pages left by
// writing a table or reading its metadata would only crowd out what other
// processes cache. Best effort: an error is ignored.
func dropPageCache(fd int) { _ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED) }

// startWriteback asks the kernel to start writing back the dirty pages of
// [off, off+n) of the file behind fd, without waiting (sync_file_range
// with SYNC_FILE_RANGE_WRITE): a table being written goes to the device
// while the rest of it is produced, so the fsync at its end finds little
// left to write. It promises nothing about durability; the fsync does.
// Best effort: an error is ignored.
func startWriteback(fd int, off, n int64) {
	_ = unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
}
