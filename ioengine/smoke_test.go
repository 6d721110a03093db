package ioengine

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestSmokeBackends(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	path := filepath.Join(dir, "f")
	os.WriteFile(path, data, 0o644)
	f, _ := os.Open(path)
	defer f.Close()
	for _, m := range []IOMode{URing, SQPoll, Syscall} {
		e, err := New(Options{Mode: m})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := 0; it < 50; it++ {
					reqs := make([]Request, 16)
					for i := range reqs {
						reqs[i] = Request{Fd: int(f.Fd()), Off: int64((i*7919 + it*13 + g) % (len(data) - 4096)), Buf: make([]byte, 4096)}
					}
					if err := e.ReadBatch(reqs); err != nil {
						t.Error(err)
						return
					}
					for _, r := range reqs {
						if !bytes.Equal(r.Buf, data[r.Off:r.Off+4096]) {
							t.Errorf("mismatch at %d", r.Off)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %+v reason=%q", m, e.Stats(), e.FallbackReason())
		e.Close()
	}
}
