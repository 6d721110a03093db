//go:build linux && !ringstore_nouring

package uring

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// RegisterBuffers registers bufs with the kernel for READ_FIXED and
// WRITE_FIXED (index i is bufs[i]). The kernel pins their pages; they must
// stay alive and unmoved until UnregisterBuffers or Close. Use off-heap
// memory (package directio).
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	if r.closed {
		return ErrClosed
	}
	if len(bufs) == 0 {
		return fmt.Errorf("uring: register buffers: no buffers")
	}
	iov := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			return fmt.Errorf("uring: register buffers: buffer %d is empty", i)
		}
		iov[i].Base = &b[0]
		iov[i].SetLen(len(b))
	}
	_, errno := register(r.fd, registerBuffers, iovecsPtr(iov), uint32(len(iov)))
	runtime.KeepAlive(iov)
	if errno != 0 {
		return os.NewSyscallError("io_uring_register(BUFFERS)", errno)
	}
	return nil
}

// UnregisterBuffers drops the registered buffers.
func (r *Ring) UnregisterBuffers() error {
	if r.closed {
		return ErrClosed
	}
	if _, errno := register(r.fd, unregisterBuffers, nil, 0); errno != 0 {
		return os.NewSyscallError("io_uring_register(UNREGISTER_BUFFERS)", errno)
	}
	return nil
}

// RegisterFiles registers file descriptors; an SQE with UseFixedFile then
// names a file by its index in fds, saving the kernel a file-table lookup
// per request. An entry of -1 leaves the slot empty.
func (r *Ring) RegisterFiles(fds []int32) error {
	if r.closed {
		return ErrClosed
	}
	if len(fds) == 0 {
		return fmt.Errorf("uring: register files: no files")
	}
	_, errno := register(r.fd, registerFiles, int32sPtr(fds), uint32(len(fds)))
	runtime.KeepAlive(fds)
	if errno != 0 {
		return os.NewSyscallError("io_uring_register(FILES)", errno)
	}
	return nil
}

// UnregisterFiles drops the registered files.
func (r *Ring) UnregisterFiles() error {
	if r.closed {
		return ErrClosed
	}
	if _, errno := register(r.fd, unregisterFiles, nil, 0); errno != 0 {
		return os.NewSyscallError("io_uring_register(UNREGISTER_FILES)", errno)
	}
	return nil
}

// Probe lists the opcodes the running kernel supports.
type Probe struct {
	LastOp    Opcode // highest opcode the kernel knows
	supported [256]bool
}

// Supported reports whether the kernel supports op.
func (p *Probe) Supported(op Opcode) bool { return p.supported[op] }

// Ops returns the supported opcodes in order.
func (p *Probe) Ops() []Opcode {
	var ops []Opcode
	for i, ok := range p.supported {
		if ok {
			ops = append(ops, Opcode(i))
		}
	}
	return ops
}

// Probe asks the kernel which opcodes it supports (IORING_REGISTER_PROBE,
// Linux 5.6).
func (r *Ring) Probe() (*Probe, error) {
	if r.closed {
		return nil, ErrClosed
	}
	const n = 256
	buf, hdr, ops := newProbeBuffer(n)
	if _, errno := register(r.fd, registerProbe, bytesPtr(buf), n); errno != 0 {
		return nil, os.NewSyscallError("io_uring_register(PROBE)", errno)
	}
	p := &Probe{LastOp: Opcode(hdr.lastOp)}
	for i := 0; i < int(hdr.opsLen) && i < n; i++ {
		if ops[i].flags&probeOpSupported != 0 {
			p.supported[ops[i].op] = true
		}
	}
	return p, nil
}
