//go:build linux && !ringstore_nouring

package uring

import "golang.org/x/sys/unix"

// The Prep methods fill a zeroed SQE (as GetSQE returns it). Memory they
// point the kernel at must stay alive and unmoved until the completion is
// seen; see the package documentation.

// PrepNop prepares a no-op: it completes with Res 0.
func (s *SQE) PrepNop() { s.Opcode = OpNop; s.Fd = -1 }

func (s *SQE) prepRW(op Opcode, fd int, addr uint64, n uint32, off uint64) {
	s.Opcode = op
	s.Fd = int32(fd)
	s.Addr = addr
	s.Len = n
	s.Off = off
}

// PrepRead reads len(buf) bytes at off of fd into buf (IORING_OP_READ).
func (s *SQE) PrepRead(fd int, buf []byte, off uint64) {
	s.prepRW(OpRead, fd, addrOf(buf), uint32(len(buf)), off)
}

// PrepWrite writes buf at off of fd (IORING_OP_WRITE).
func (s *SQE) PrepWrite(fd int, buf []byte, off uint64) {
	s.prepRW(OpWrite, fd, addrOf(buf), uint32(len(buf)), off)
}

// PrepReadv reads into the buffers iov points at (IORING_OP_READV).
func (s *SQE) PrepReadv(fd int, iov []unix.Iovec, off uint64) {
	s.prepRW(OpReadv, fd, iovecAddr(iov), uint32(len(iov)), off)
}

// PrepWritev writes the buffers iov points at (IORING_OP_WRITEV).
func (s *SQE) PrepWritev(fd int, iov []unix.Iovec, off uint64) {
	s.prepRW(OpWritev, fd, iovecAddr(iov), uint32(len(iov)), off)
}

// PrepReadFixed reads into buf, which lies within registered buffer
// bufIndex (IORING_OP_READ_FIXED).
func (s *SQE) PrepReadFixed(fd int, buf []byte, off uint64, bufIndex uint16) {
	s.prepRW(OpReadFixed, fd, addrOf(buf), uint32(len(buf)), off)
	s.BufIndex = bufIndex
}

// PrepWriteFixed writes buf, which lies within registered buffer bufIndex
// (IORING_OP_WRITE_FIXED).
func (s *SQE) PrepWriteFixed(fd int, buf []byte, off uint64, bufIndex uint16) {
	s.prepRW(OpWriteFixed, fd, addrOf(buf), uint32(len(buf)), off)
	s.BufIndex = bufIndex
}

// PrepFsync flushes fd (IORING_OP_FSYNC); flags FsyncDatasync makes it an
// fdatasync.
func (s *SQE) PrepFsync(fd int, flags uint32) {
	s.prepRW(OpFsync, fd, 0, 0, 0)
	s.OpFlags = flags
}

// PrepTimeout completes after ts elapses (Res -ETIME) or after count other
// completions (Res 0), whichever comes first; count 0 means time only.
// flags TimeoutAbs makes ts an absolute CLOCK_MONOTONIC time.
func (s *SQE) PrepTimeout(ts *Timespec, count uint32, flags uint32) {
	s.prepRW(OpTimeout, -1, timespecAddr(ts), 1, uint64(count))
	s.OpFlags = flags
}

// UseFixedFile marks the SQE's Fd as an index into the registered files.
func (s *SQE) UseFixedFile() { s.Flags |= SQEFixedFile }

// Link makes the next SQE start only after this one succeeds
// (IOSQE_IO_LINK); a failure or short transfer cancels the rest of the chain
// with -ECANCELED.
func (s *SQE) Link() { s.Flags |= SQEIOLink }

// Drain makes the SQE start only after every earlier SQE has completed
// (IOSQE_IO_DRAIN).
func (s *SQE) Drain() { s.Flags |= SQEIODrain }
