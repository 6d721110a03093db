package kv

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// TestTableFile: bytes written in pieces of every size, across chunk
// boundaries and ending mid-page, read back exactly, at the file's exact
// size, with O_DIRECT (through each backend) and through the page cache.
func TestTableFile(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, tableChunk - 1, tableChunk, tableChunk + 1, 3*tableChunk + 12345} {
		for _, mode := range []string{"direct-uring", "direct-syscall", "buffered"} {
			iomode := ioengine.URing
			if mode == "direct-syscall" {
				iomode = ioengine.Syscall
			}
			eng := testengine.New(t, iomode, ioengine.Options{})
			path := filepath.Join(testdir.Direct(t), "t.sst")
			tf, err := createTable(path, eng, mode == "buffered")
			if err != nil {
				t.Fatal(err)
			}
			if tf.direct != (mode != "buffered") {
				t.Fatalf("%s: direct is %v", mode, tf.direct)
			}
			want := make([]byte, size)
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			for i := range want {
				want[i] = byte(rng.Uint32())
			}
			for rest := want; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(70000))
				if w, err := tf.Write(rest[:n]); err != nil || w != n {
					t.Fatalf("%s, %d bytes: Write: %d, %v", mode, size, w, err)
				}
				rest = rest[n:]
			}
			if tf.n != int64(size) {
				t.Fatalf("%s: counted %d bytes, wrote %d", mode, tf.n, size)
			}
			if err := tf.sync(); err != nil {
				t.Fatalf("%s, %d bytes: sync: %v", mode, size, err)
			}
			if err := tf.close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, %d bytes: read back %d bytes that differ", mode, size, len(got))
			}
		}
	}
}

// TestTableFileWriteFails: a chunk's write failing with EIO fails the
// Write or the sync that meets it with the errno, and every later call with
// the same error.
func TestTableFileWriteFails(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		plan := ioengine.NewFaultPlan(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpWrite, After: 1})
		eng := testengine.New(t, mode, ioengine.Options{Faults: plan})
		tf, err := createTable(filepath.Join(testdir.Direct(t), "t.sst"), eng, false)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, tableChunk)
		var werr error
		for i := 0; i < 4 && werr == nil; i++ {
			_, werr = tf.Write(buf)
		}
		if werr == nil {
			werr = tf.sync()
		}
		if !errors.Is(werr, unix.EIO) {
			t.Fatalf("%s: a failed chunk write gave %v, want EIO", mode, werr)
		}
		if _, err := tf.Write(buf[:1]); !errors.Is(err, unix.EIO) {
			t.Fatalf("%s: Write after the failure: %v", mode, err)
		}
		if err := tf.sync(); !errors.Is(err, unix.EIO) {
			t.Fatalf("%s: sync after the failure: %v", mode, err)
		}
		tf.close()
	}
}
