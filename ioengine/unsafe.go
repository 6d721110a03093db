package ioengine

import "unsafe"

// addrOf returns the address of b's first byte, for comparing buffers with
// registered memory (never turned back into a pointer).
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
