// Package testdir gives tests directories on file systems that accept
// O_DIRECT.
package testdir

import (
	"os"
	"testing"

	"github.com/ringstore/ringstore/directio"
)

// Direct returns a fresh empty directory, removed at test cleanup, on a file
// system that accepts O_DIRECT, as proven by directio.Check.
//
// It tries t.TempDir() first. When that file system refuses O_DIRECT (tmpfs
// before Linux 6.6, some container overlays), it tries a directory named
// ".testdata-direct-*" under the working directory, which `go test` sets to
// the package directory on the repository's disk. It calls t.Skip, giving
// both reasons, only when neither accepts O_DIRECT.
func Direct(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	_, tmpErr := directio.Check(dir)
	if tmpErr == nil {
		return dir
	}

	wd, err := os.Getwd()
	if err != nil {
		t.Skipf("no directory accepts O_DIRECT: %v; and no working directory: %v", tmpErr, err)
	}
	dir, err = os.MkdirTemp(wd, ".testdata-direct-")
	if err != nil {
		t.Skipf("no directory accepts O_DIRECT: %v; and %v", tmpErr, err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("testdir: removing %s: %v", dir, err)
		}
	})
	if _, err := directio.Check(dir); err != nil {
		t.Skipf("no directory accepts O_DIRECT: %v; and %v", tmpErr, err)
	}
	return dir
}
