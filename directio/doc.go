// Package directio provides the memory and files that O_DIRECT I/O needs:
// buffers outside the Go heap, files opened with O_DIRECT, and the alignment
// a file system demands of both.
//
// # What O_DIRECT requires
//
// A file opened with O_DIRECT moves data between the device and the caller's
// buffer without the page cache. In exchange the kernel asks three things of
// every read and write, and fails the call with EINVAL when one is not met:
//
//   - the buffer address is a multiple of the memory alignment;
//   - the file offset is a multiple of the offset alignment;
//   - the length is a multiple of the offset alignment.
//
// Both alignments depend on the file system and the device under it.
// [Discover] asks the kernel (statx with STATX_DIOALIGN, Linux 6.1 and later)
// and falls back to the device's logical block size. On the ext4 and xfs
// disks ringstore is built for they are 512 or 4096 bytes; ringstore itself
// always uses [BlockSize] (4096) for buffers, offsets and lengths, which
// satisfies every alignment that divides it. [Check] proves a directory works
// end to end and is what `ringstore probe --dir D` reports.
//
// Not every file system accepts O_DIRECT: open fails with EINVAL on tmpfs
// before Linux 6.6, on procfs and sysfs, on some FUSE and network file
// systems, and on directories. [OpenFile] reports that as an error wrapping
// [ErrNotSupported], the errno and the file system's name.
//
// O_DIRECT is not durability. A completed direct write may still sit in the
// device's volatile write cache, and the metadata that makes it reachable
// (the file size after an extending write, newly allocated extents) is not
// written at all until fdatasync. Callers that promise durability must still
// sync.
//
// # Why memory outside the Go heap
//
// With io_uring the kernel reads and writes a buffer long after the system
// call that submitted it has returned. Memory from the Go heap is a poor fit
// for that: the collector may free it once the last Go reference is dropped
// (and reuse it while the kernel still writes into it), and nothing in the
// language promises that heap objects never move. [Alloc] therefore returns
// anonymous memory from mmap, which the runtime neither scans, moves nor
// frees. It is page aligned, so it also meets every O_DIRECT memory
// alignment up to the page size, and it starts zeroed.
//
// # Caveats
//
// Memory from [Alloc] lives until [Free], and only until then:
//
//   - It is never collected. A buffer that is not freed leaks for the life of
//     the process, and it is not counted by runtime.MemStats or GOMEMLIMIT.
//   - Free unmaps the memory. Every slice of it, including sub-slices taken
//     earlier, is invalid afterwards; touching one kills the process with a
//     fault that recover cannot catch. Go cannot clear those slices for you.
//   - Do not Free a buffer that the kernel may still use: wait for every
//     submitted I/O on it to complete first. The kernel holds its own
//     reference to the pages, so an early Free does not corrupt the kernel,
//     but the data read into the buffer is lost and a later Alloc may receive
//     the same addresses.
//   - The runtime does not scan this memory, so it must hold only bytes,
//     never Go pointers.
//   - Free accepts only the full slice that Alloc returned (reslice with
//     b[:cap(b)] if needed). Anything else, and a second Free of the same
//     buffer, is an error wrapping [ErrNotAllocated], never a crash.
//
// Alloc, Free, OpenFile, Discover, Check and FSType are safe for concurrent
// use.
//
// Opening with O_CREAT on a file system that refuses O_DIRECT may leave the
// new, empty file behind: Linux creates the file before it checks for
// O_DIRECT support.
//
// # Other systems
//
// Only Linux is supported. Elsewhere Alloc returns aligned memory from the
// Go heap (kept alive until Free), and OpenFile, Discover and Check return
// errors wrapping both [ErrNotSupported] and errors.ErrUnsupported, so code
// that uses this package keeps compiling.
package directio
