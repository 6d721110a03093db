//go:build !linux

package arrowscan

import "testing"

// dropCache is Linux-only; elsewhere the benchmark skips.
func dropCache(b *testing.B, path string) { b.Skip("dropping the page cache needs Linux") }
