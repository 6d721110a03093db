package ioengine

import (
	"fmt"
	"testing"
)

// BenchmarkFileRef: batches of 64 page-cache reads of 4 KiB named by a
// bare descriptor and by a File (a reference taken and dropped per
// request), on the syscall backend and on io_uring: the cost of the
// File's lifetime against the cost of a read.
func BenchmarkFileRef(b *testing.B) {
	data := block(64*blockSize, 3)
	f, fd := openFile(b, b.TempDir(), "f", data)
	file := NewFile(f)
	defer file.Close()
	for _, mode := range []IOMode{Syscall, URing} {
		e := newEngine(b, mode, Options{})
		for _, byFile := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/file=%v", mode, byFile), func(b *testing.B) {
				reqs := make([]Request, 64)
				bufs := make([]byte, 64*blockSize)
				for i := range reqs {
					reqs[i] = Request{Op: OpRead, Off: int64(i) * blockSize, Buf: bufs[i*blockSize : (i+1)*blockSize]}
					if byFile {
						reqs[i].File = file
					} else {
						reqs[i].Fd = fd
					}
				}
				b.SetBytes(int64(len(bufs)))
				for b.Loop() {
					if err := e.Do(reqs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
