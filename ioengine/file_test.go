package ioengine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileCloseWaitsForRequests: Close of a File with a read in flight
// waits for the read, which completes whole; a request after Close fails
// with ErrFileClosed and is not issued; a second Close says so.
func TestFileCloseWaitsForRequests(t *testing.T) {
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			hold := make(chan struct{})
			p := NewFaultPlan(Fault{Kind: FaultShort, Op: OpRead, Bytes: 100, Hold: hold})
			e := newEngine(t, bc.mode, bc.with(Options{Faults: p}))
			path := filepath.Join(t.TempDir(), "f")
			data := block(2*blockSize, 5)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFile(path, os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(data))
			read := make(chan error, 1)
			go func() {
				r := []Request{{Op: OpRead, File: f, Buf: buf}}
				read <- e.Do(r)
			}()
			for deadline := time.Now().Add(30 * time.Second); p.Injected() == 0; time.Sleep(100 * time.Microsecond) {
				if time.Now().After(deadline) {
					close(hold)
					t.Fatal("the read was never issued")
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- f.Close() }()
			select {
			case err := <-closed:
				t.Fatalf("Close returned with a read in flight: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			r := []Request{{Op: OpRead, File: f, Buf: make([]byte, 10)}}
			if err := e.Do(r); !errors.Is(err, ErrFileClosed) {
				t.Errorf("a read after Close began: %v, want ErrFileClosed", err)
			}
			close(hold)
			if err := <-read; err != nil || !bytes.Equal(buf, data) {
				t.Fatalf("the read in flight: %v (data equal: %v)", err, bytes.Equal(buf, data))
			}
			if err := <-closed; err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := f.Close(); !errors.Is(err, ErrFileClosed) {
				t.Errorf("second Close: %v, want ErrFileClosed", err)
			}
			if injected := p.Injected(); injected != 1 {
				t.Errorf("%d requests issued on the file, want 1 (none after Close)", injected)
			}
		})
	}
}
