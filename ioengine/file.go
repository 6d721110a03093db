package ioengine

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
)

// ErrFileClosed is the error of a request on a File that Close has begun
// to close.
var ErrFileClosed = errors.New("ioengine: file closed")

// File is an open file whose descriptor has a lifetime the engine keeps:
// every request on it holds a reference while it is in flight, and Close
// fails the requests that come after it and waits for those in flight
// before it closes the descriptor. So a Close can never race a read or
// write — the descriptor's number is never reused under one — and no
// caller has to keep the file alive by convention (Go's internal/poll.FD
// does the same with its fdMutex).
//
// The zero File is not usable; make one with NewFile or OpenFile. Safe for
// concurrent use.
type File struct {
	f  *os.File
	fd int
	// refs counts the requests in flight; fileClosing is set once Close
	// has begun. drained is closed (once) when both hold: closing and no
	// request in flight.
	refs    atomic.Int64
	drained chan struct{}
	once    sync.Once
}

const fileClosing = 1 << 62

// NewFile takes f over: its descriptor is used by requests until Close,
// which closes f.
func NewFile(f *os.File) *File {
	return &File{f: f, fd: int(f.Fd()), drained: make(chan struct{})}
}

// OpenFile opens a file as os.OpenFile does and returns it as a File.
func OpenFile(path string, flag int, perm os.FileMode) (*File, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return NewFile(f), nil
}

// Name is the name the file was opened with.
func (f *File) Name() string { return f.f.Name() }

// OS returns the *os.File for what the engine does not do (Stat,
// Truncate, fallocate). It must not be closed, nor used after Close.
func (f *File) OS() *os.File { return f.f }

// Fd returns the descriptor, for calls outside the engine that the caller
// orders before Close itself; -1 once Close has begun.
func (f *File) Fd() int {
	if f.refs.Load()&fileClosing != 0 {
		return -1
	}
	return f.fd
}

// acquire takes a reference for a request; false once Close has begun.
func (f *File) acquire() bool {
	if f.refs.Add(1)&fileClosing != 0 {
		f.release()
		return false
	}
	return true
}

func (f *File) release() {
	if f.refs.Add(-1) == fileClosing {
		f.once.Do(func() { close(f.drained) })
	}
}

// Close fails later requests with ErrFileClosed, waits for those in flight
// and closes the descriptor. A second Close returns ErrFileClosed.
func (f *File) Close() error {
	for {
		r := f.refs.Load()
		if r&fileClosing != 0 {
			return ErrFileClosed
		}
		if f.refs.CompareAndSwap(r, r|fileClosing) {
			if r == 0 {
				f.once.Do(func() { close(f.drained) })
			}
			break
		}
	}
	<-f.drained
	return f.f.Close()
}
