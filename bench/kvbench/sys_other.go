//go:build !linux

package kvbench

import "errors"

func readProcIO() (int64, error) { return 0, errors.ErrUnsupported }
func maxRSS() (int64, error)     { return 0, errors.ErrUnsupported }

const (
	dropCacheSystem = "none (not Linux)"
	dropCacheFiles  = "none (not Linux)"
)

func dropSystemCache() error              { return errors.ErrUnsupported }
func dropFiles(dir string) (int64, error) { return 0, errors.ErrUnsupported }
