//go:build !linux

package main

import (
	"errors"
	"os"
)

func dropFile(f *os.File) error {
	return &os.PathError{Op: "drop from page cache", Path: f.Name(), Err: errors.ErrUnsupported}
}
