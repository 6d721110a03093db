package ioengine

import "golang.org/x/sys/unix"

func fdatasync(fd int) error { return unix.Fdatasync(fd) }
