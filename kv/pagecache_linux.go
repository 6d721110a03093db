package kv

import "golang.org/x/sys/unix"

// dropPageCache asks the kernel to drop the page cache of the file behind
// fd (clean pages go at once; the call does not flush dirty ones). kv reads
// its tables with O_DIRECT through its own block cache, so pages left by
// writing a table or reading its metadata would only crowd out what other
// processes cache. Best effort: an error is ignored.
func dropPageCache(fd int) { _ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED) }
