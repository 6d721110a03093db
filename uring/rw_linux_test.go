//go:build linux && !ringstore_nouring

package uring_test

// File I/O through the real ring: liburing's test/read-write.c,
// file-verify.c, short-read.c, fsync.c and link.c re-expressed, with
// buffered and O_DIRECT files under every ring configuration.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/uring"
)

// blockSize is the unit of the I/O tests: a multiple of every O_DIRECT
// alignment, and the page size, so anonMem slices at block boundaries are
// aligned for O_DIRECT.
const blockSize = 4096

// anonMem returns size bytes of page-aligned memory outside the Go heap,
// which stays put while the kernel reads or writes it.
func anonMem(t testing.TB, size int) []byte {
	t.Helper()
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap %d bytes: %v", size, err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return m
}

// fileMode is how a test file is opened.
type fileMode struct {
	name   string
	direct bool // O_DIRECT
}

var fileModes = []fileMode{{"buffered", false}, {"direct", true}}

// createFile makes a file in a fresh temporary directory holding data and
// opens it read-write, with O_DIRECT when direct. It skips the test when the
// file system refuses O_DIRECT.
func createFile(t testing.TB, data []byte, direct bool) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	flag := os.O_RDWR
	if direct {
		flag |= unix.O_DIRECT
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		if direct && errors.Is(err, unix.EINVAL) {
			t.Skipf("O_DIRECT refused in %s: %v", filepath.Dir(path), err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// request is one SQE the runner prepares and the result it must complete
// with. Whatever prep points the kernel at (buffers, iovecs) is referenced
// from the request, and so lives until the runner returns.
type request struct {
	prep func(*uring.SQE)
	want int32                 // Res the completion must carry
	iov  []unix.Iovec          // kept alive until the completion
	done func(uring.CQE) error // optional check of the completion
}

// runRequests issues reqs with at most depth in flight, refilling the SQ as
// completions come in, and checks that each completes once with its Res.
func runRequests(t testing.TB, r *uring.Ring, reqs []request, depth int) {
	t.Helper()
	depth = min(depth, int(r.SQEntries()))
	seen := make([]bool, len(reqs))
	next, inflight, done := 0, 0, 0
	for done < len(reqs) {
		for inflight < depth && next < len(reqs) {
			sqe := r.GetSQE()
			if sqe == nil {
				break // SQPOLL: the kernel thread has not consumed the SQ yet
			}
			reqs[next].prep(sqe)
			sqe.UserData = uint64(next)
			next++
			inflight++
		}
		for _, c := range waitCQEs(t, r, 1) {
			i := int(c.UserData)
			if i >= len(reqs) || seen[i] {
				t.Fatalf("completion with user_data %d: unknown or seen twice", c.UserData)
			}
			seen[i] = true
			inflight--
			done++
			if c.Res != reqs[i].want {
				t.Fatalf("request %d: Res %d (%v), want %d", i, c.Res, c.Err(), reqs[i].want)
			}
			if reqs[i].done != nil {
				if err := reqs[i].done(c); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
		}
	}
}

// rwMethod is a way of moving blocks between memory and a file.
type rwMethod struct {
	name     string
	blocks   int  // file blocks per request
	reversed bool // the blocks of a request lie in memory in reverse order
	register func(t testing.TB, r *uring.Ring, fd int, src, dst []byte) (sqeFd int)
	// prep returns the request that moves mem to or from the file at off;
	// bufIndex is the registered buffer mem lies in.
	prep func(write bool, fd int, mem []byte, off uint64, bufIndex uint16) request
}

var rwMethods = []rwMethod{{
	name:   "read-write",
	blocks: 1,
	prep: func(write bool, fd int, mem []byte, off uint64, _ uint16) request {
		return request{want: int32(len(mem)), prep: func(s *uring.SQE) {
			if write {
				s.PrepWrite(fd, mem, off)
			} else {
				s.PrepRead(fd, mem, off)
			}
		}}
	},
}, {
	name:     "readv-writev",
	blocks:   3,
	reversed: true,
	prep: func(write bool, fd int, mem []byte, off uint64, _ uint16) request {
		// One iovec per block, in an order the memory does not have: the
		// kernel must follow the iovecs, not the addresses.
		iov := make([]unix.Iovec, 0, 3)
		for b := len(mem) - blockSize; b >= 0; b -= blockSize {
			iov = append(iov, unix.Iovec{Base: &mem[b]})
			iov[len(iov)-1].SetLen(blockSize)
		}
		return request{want: int32(len(mem)), iov: iov, prep: func(s *uring.SQE) {
			if write {
				s.PrepWritev(fd, iov, off)
			} else {
				s.PrepReadv(fd, iov, off)
			}
		}}
	},
}, {
	name:   "fixed-buffers",
	blocks: 1,
	register: func(t testing.TB, r *uring.Ring, fd int, src, dst []byte) int {
		if err := r.RegisterBuffers([][]byte{src, dst}); err != nil {
			t.Fatalf("RegisterBuffers: %v", err)
		}
		return fd
	},
	prep: func(write bool, fd int, mem []byte, off uint64, bufIndex uint16) request {
		return request{want: int32(len(mem)), prep: func(s *uring.SQE) {
			if write {
				s.PrepWriteFixed(fd, mem, off, bufIndex)
			} else {
				s.PrepReadFixed(fd, mem, off, bufIndex)
			}
		}}
	},
}, {
	name:   "fixed-file",
	blocks: 2,
	register: func(t testing.TB, r *uring.Ring, fd int, _, _ []byte) int {
		// Slot 1 holds the file; slot 0 stays empty, so a wrong index fails.
		if err := r.RegisterFiles([]int32{-1, int32(fd)}); err != nil {
			t.Fatalf("RegisterFiles: %v", err)
		}
		return 1
	},
	prep: func(write bool, fd int, mem []byte, off uint64, _ uint16) request {
		return request{want: int32(len(mem)), prep: func(s *uring.SQE) {
			if write {
				s.PrepWrite(fd, mem, off)
			} else {
				s.PrepRead(fd, mem, off)
			}
			s.UseFixedFile()
		}}
	},
}}

// TestReadWrite re-expresses liburing's test/read-write.c: a file is
// written in blocks at random offsets with many writes in flight, read back
// in another random order, and compared byte for byte, through plain,
// vectored and fixed-buffer I/O and a registered file, buffered and
// O_DIRECT, under every ring configuration.
func TestReadWrite(t *testing.T) {
	const (
		requests = 96
		depth    = 32
	)
	for _, mode := range fileModes {
		t.Run("mode="+mode.name, func(t *testing.T) {
			for _, rc := range ringConfigs {
				t.Run("ring="+rc.name, func(t *testing.T) {
					for _, m := range rwMethods {
						t.Run("method="+m.name, func(t *testing.T) {
							testReadWrite(t, mode, rc, m, requests, depth)
						})
					}
				})
			}
		})
	}
}

func testReadWrite(t *testing.T, mode fileMode, rc ringConfig, m rwMethod, requests, depth int) {
	size := requests * m.blocks * blockSize
	src, dst := anonMem(t, size), anonMem(t, size)
	rng := rand.New(rand.NewPCG(uint64(size), uint64(m.blocks)))
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(src[i:], rng.Uint64())
	}
	f, path := createFile(t, nil, mode.direct)
	r := newRing(t, rc.with(64, 0))
	fd := int(f.Fd())
	if m.register != nil {
		fd = m.register(t, r, fd, src, dst)
	}

	// Request k moves file blocks [k*blocks, (k+1)*blocks); its memory is
	// the same span of src or dst, except that readv-writev stores the
	// blocks of a request in reverse.
	span := m.blocks * blockSize
	issue := func(write bool, mem []byte, bufIndex uint16) {
		reqs := make([]request, requests)
		for i, k := range rng.Perm(requests) {
			reqs[i] = m.prep(write, fd, mem[k*span:(k+1)*span], uint64(k*span), bufIndex)
		}
		runRequests(t, r, reqs, depth)
	}
	issue(true, src, 0)
	issue(false, dst, 1)

	if i := firstDiff(dst, src); i >= 0 {
		t.Fatalf("read back differs from what was written at byte %d (block %d)", i, i/blockSize)
	}
	// Check the file itself, so that consistent mistakes in both
	// directions (a wrong offset, say) cannot cancel out.
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := src
	if m.reversed {
		want = reverseBlocks(src, m.blocks)
	}
	if len(onDisk) != size {
		t.Fatalf("file is %d bytes, want %d", len(onDisk), size)
	}
	if i := firstDiff(onDisk, want); i >= 0 {
		t.Fatalf("file differs from what was written at byte %d (block %d)", i, i/blockSize)
	}
}

// reverseBlocks returns b with the blocks of every group of n reversed.
func reverseBlocks(b []byte, n int) []byte {
	out := make([]byte, len(b))
	span := n * blockSize
	for g := 0; g < len(b); g += span {
		for j := range n {
			copy(out[g+(n-1-j)*blockSize:g+(n-j)*blockSize], b[g+j*blockSize:g+(j+1)*blockSize])
		}
	}
	return out
}

// firstDiff returns the index of the first byte where a and b differ, -1
// when they are equal.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// patternByte is byte x of the verification pattern: every 8-byte word
// holds its own file offset, little endian.
func patternByte(x uint64) byte { return byte((x &^ 7) >> (8 * (x & 7))) }

func patternFile(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = patternByte(uint64(i))
	}
	return b
}

// verifyPattern checks that b holds the pattern of the file at off.
func verifyPattern(b []byte, off uint64) error {
	for i := range b {
		if want := patternByte(off + uint64(i)); b[i] != want {
			return fmt.Errorf("byte %d of the read at offset %d is %#x, want %#x (the pattern of offset %d)",
				i, off, b[i], want, off+uint64(i))
		}
	}
	return nil
}

// TestFileVerify re-expresses liburing's test/file-verify.c: a file whose
// every 8-byte word encodes its offset is read in chunks of random sizes in
// random order, many in flight, each into memory far from its offset, and
// every chunk is checked against the offset it was read from.
func TestFileVerify(t *testing.T) {
	const (
		fileSize = 4 << 20
		depth    = 48
	)
	data := patternFile(fileSize)
	for _, mode := range fileModes {
		t.Run("mode="+mode.name, func(t *testing.T) {
			for _, rc := range ringConfigs {
				t.Run("ring="+rc.name, func(t *testing.T) {
					for _, op := range []string{"read", "readv", "read-fixed"} {
						t.Run("op="+op, func(t *testing.T) {
							f, _ := createFile(t, data, mode.direct)
							r := newRing(t, rc.with(64, 0))
							mem := anonMem(t, fileSize)
							if op == "read-fixed" {
								if err := r.RegisterBuffers([][]byte{mem}); err != nil {
									t.Fatalf("RegisterBuffers: %v", err)
								}
							}
							rng := rand.New(rand.NewPCG(uint64(len(op)), 1))
							// Cut the file into chunks: whole blocks for O_DIRECT,
							// any length for buffered I/O.
							type chunk struct{ off, n int }
							var chunks []chunk
							for off := 0; off < fileSize; {
								n := 1 + rng.IntN(5*blockSize)
								if mode.direct {
									n = blockSize * (1 + rng.IntN(16))
								}
								n = min(n, fileSize-off)
								chunks = append(chunks, chunk{off, n})
								off += n
							}
							rng.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
							// Memory is handed out in the shuffled order, so a
							// chunk's buffer does not sit at its file offset.
							reqs := make([]request, len(chunks))
							at := 0
							for i, c := range chunks {
								buf := mem[at : at+c.n]
								at += c.n
								off := uint64(c.off)
								rq := request{want: int32(c.n), done: func(uring.CQE) error { return verifyPattern(buf, off) }}
								switch op {
								case "read":
									rq.prep = func(s *uring.SQE) { s.PrepRead(int(f.Fd()), buf, off) }
								case "read-fixed":
									rq.prep = func(s *uring.SQE) { s.PrepReadFixed(int(f.Fd()), buf, off, 0) }
								case "readv":
									// Split at a block boundary when there is one.
									cut := (c.n / 2) &^ (blockSize - 1)
									if !mode.direct {
										cut = c.n / 2
									}
									iov := []unix.Iovec{{Base: &buf[0]}}
									iov[0].SetLen(c.n)
									if cut > 0 {
										iov[0].SetLen(cut)
										iov = append(iov, unix.Iovec{Base: &buf[cut]})
										iov[1].SetLen(c.n - cut)
									}
									rq.iov = iov
									rq.prep = func(s *uring.SQE) { s.PrepReadv(int(f.Fd()), iov, off) }
								}
								reqs[i] = rq
							}
							runRequests(t, r, reqs, depth)
						})
					}
				})
			}
		})
	}
}

// TestShortRead re-expresses liburing's test/short-read.c: a read that
// runs past the end of the file completes with the bytes there were, and
// one at or beyond the end with 0.
func TestShortRead(t *testing.T) {
	const fileSize = blockSize + 100
	data := patternFile(fileSize)
	for _, mode := range fileModes {
		t.Run("mode="+mode.name, func(t *testing.T) {
			for _, rc := range ringConfigs {
				t.Run("ring="+rc.name, func(t *testing.T) {
					f, _ := createFile(t, data, mode.direct)
					mem := anonMem(t, 2*blockSize)
					for _, tc := range []struct {
						name   string
						off, n int
						want   int32
					}{
						{"whole-file", 0, 2 * blockSize, fileSize},
						{"tail", blockSize, blockSize, 100},
						{"at-eof", fileSize, blockSize, 0},
						{"past-eof", 4 * blockSize, blockSize, 0},
						{"inside", 0, blockSize, blockSize},
					} {
						t.Run("case="+tc.name, func(t *testing.T) {
							if mode.direct && tc.off%blockSize != 0 {
								t.Skipf("offset %d is not aligned for O_DIRECT", tc.off)
							}
							r := newRing(t, rc.cfg) // per subtest: a single-issuer ring stays on its thread
							buf := mem[:tc.n]
							for i := range buf {
								buf[i] = 0xee
							}
							sqe := r.GetSQE()
							sqe.PrepRead(int(f.Fd()), buf, uint64(tc.off))
							c := waitCQEs(t, r, 1)[0]
							if c.Res != tc.want {
								t.Fatalf("read of %d at %d: Res %d (%v), want %d", tc.n, tc.off, c.Res, c.Err(), tc.want)
							}
							if err := verifyPattern(buf[:c.Res], uint64(tc.off)); err != nil {
								t.Fatal(err)
							}
							// Memory past what the read returned is left alone, except
							// that O_DIRECT moves whole blocks: the rest of the last
							// block may be overwritten (ext4 puts zeros there).
							untouched := int(c.Res)
							if mode.direct {
								untouched = (untouched + blockSize - 1) &^ (blockSize - 1)
							}
							for i := untouched; i < len(buf); i++ {
								if buf[i] != 0xee {
									t.Fatalf("byte %d, past what the read returned (%d), was written", i, c.Res)
								}
							}
						})
					}
				})
			}
		})
	}
}

// TestFsync re-expresses liburing's test/fsync.c: a write linked to an
// FSYNC (or FSYNC with FsyncDatasync) completes first, the flush after it,
// both successfully; an FSYNC on its own succeeds too.
func TestFsync(t *testing.T) {
	const n = 4 * blockSize
	for _, mode := range fileModes {
		t.Run("mode="+mode.name, func(t *testing.T) {
			for _, rc := range ringConfigs {
				t.Run("ring="+rc.name, func(t *testing.T) {
					for _, tc := range []struct {
						name   string
						flags  uint32
						linked bool
					}{
						{"fsync", 0, true},
						{"fdatasync", uring.FsyncDatasync, true},
						{"fsync-alone", 0, false},
						{"fdatasync-alone", uring.FsyncDatasync, false},
					} {
						t.Run("op="+tc.name, func(t *testing.T) {
							f, path := createFile(t, nil, mode.direct)
							r := newRing(t, rc.cfg)
							fd := int(f.Fd())
							mem := anonMem(t, n)
							copy(mem, patternFile(n))
							want := []int32{0}
							if tc.linked {
								sqe := r.GetSQE()
								sqe.PrepWrite(fd, mem, 0)
								sqe.Link()
								sqe.UserData = 0
								want = []int32{n, 0}
							}
							sqe := r.GetSQE()
							sqe.PrepFsync(fd, tc.flags)
							sqe.UserData = uint64(len(want) - 1)
							cqes := waitCQEs(t, r, len(want))
							for i, c := range cqes {
								if c.UserData != uint64(i) || c.Res != want[c.UserData] {
									t.Fatalf("completion %d: user_data %d Res %d (%v); want user_data %d Res %d, the write before the flush",
										i, c.UserData, c.Res, c.Err(), i, want[i])
								}
							}
							if tc.linked {
								got, err := os.ReadFile(path)
								if err != nil {
									t.Fatal(err)
								}
								if !bytes.Equal(got, mem) {
									t.Fatalf("file after write+fsync differs from the write")
								}
							}
						})
					}
				})
			}
		})
	}
}

// TestLinkFailure re-expresses liburing's test/link.c: when an SQE in an
// IOSQE_IO_LINK chain fails, or a read in it comes up short, the SQEs after
// it in the chain complete with -ECANCELED; SQEs outside the chain, and
// those after a hard link, are unaffected.
func TestLinkFailure(t *testing.T) {
	const fileSize = 100
	type step struct {
		op   string // "nop", "read-bad-fd", "read-bad-fixed", "read-short", "read-full"
		link uint8  // 0, uring.SQEIOLink or uring.SQEIOHardlink
		want int32
	}
	var (
		link     = uring.SQEIOLink
		hard     = uring.SQEIOHardlink
		canceled = -int32(unix.ECANCELED)
		badf     = -int32(unix.EBADF)
	)
	cases := []struct {
		name  string
		steps []step
	}{
		{"bad-fd-first", []step{{"read-bad-fd", link, badf}, {"nop", link, canceled}, {"nop", 0, canceled}}},
		{"bad-fd-middle", []step{{"nop", link, 0}, {"read-bad-fd", link, badf}, {"nop", 0, canceled}, {"nop", 0, 0}}},
		{"bad-fixed-file", []step{{"read-bad-fixed", link, badf}, {"nop", 0, canceled}}},
		{"bad-fd-last", []step{{"nop", link, 0}, {"nop", link, 0}, {"read-bad-fd", 0, badf}}},
		{"short-read-middle", []step{{"nop", link, 0}, {"read-short", link, fileSize}, {"nop", link, canceled}, {"nop", 0, canceled}}},
		{"short-read-hardlink", []step{{"nop", hard, 0}, {"read-short", hard, fileSize}, {"nop", 0, 0}}},
		{"bad-fd-hardlink", []step{{"read-bad-fd", hard, badf}, {"nop", 0, 0}}},
		{"full-read", []step{{"nop", link, 0}, {"read-full", link, fileSize}, {"nop", 0, 0}}},
	}
	for _, rc := range ringConfigs {
		t.Run("ring="+rc.name, func(t *testing.T) {
			f, _ := createFile(t, patternFile(fileSize), false)
			mem := anonMem(t, blockSize)
			for _, tc := range cases {
				t.Run("chain="+tc.name, func(t *testing.T) {
					r := newRing(t, rc.cfg) // per subtest: a single-issuer ring stays on its thread
					for i, s := range tc.steps {
						sqe := r.GetSQE()
						switch s.op {
						case "nop":
							sqe.PrepNop()
						case "read-bad-fd":
							sqe.PrepRead(-1, mem, 0)
						case "read-bad-fixed":
							sqe.PrepRead(3, mem, 0) // no files registered
							sqe.UseFixedFile()
						case "read-short":
							sqe.PrepRead(int(f.Fd()), mem, 0)
						case "read-full":
							sqe.PrepRead(int(f.Fd()), mem[:fileSize], 0)
						}
						sqe.Flags |= s.link
						sqe.UserData = uint64(i)
					}
					got := make([]int32, len(tc.steps))
					seen := make([]bool, len(tc.steps))
					for _, c := range waitCQEs(t, r, len(tc.steps)) {
						if c.UserData >= uint64(len(got)) || seen[c.UserData] {
							t.Fatalf("completion with user_data %d: unknown or seen twice", c.UserData)
						}
						seen[c.UserData] = true
						got[c.UserData] = c.Res
					}
					for i, s := range tc.steps {
						if got[i] != s.want {
							t.Errorf("step %d (%s): Res %d, want %d; all: %v", i, s.op, got[i], s.want, got)
						}
					}
				})
			}
		})
	}
}
