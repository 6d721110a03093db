//go:build !linux

package main

import "errors"

func denyIOURing() error { return errors.ErrUnsupported }
