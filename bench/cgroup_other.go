//go:build !linux

package bench

import (
	"errors"
	"fmt"
)

// DetectMemCgroups always fails here: cgroups are Linux's.
func DetectMemCgroups() (*MemCgroups, error) {
	return nil, fmt.Errorf("%w: %w", ErrNoMemCgroup, errors.ErrUnsupported)
}

// New fails: there are no cgroups on this system.
func (m *MemCgroups) New(limit int64) (*MemCgroup, error) { return nil, errors.ErrUnsupported }

// JoinMemCgroup fails: there are no cgroups on this system.
func JoinMemCgroup(dir string) error { return errors.ErrUnsupported }

// Usage fails: there are no cgroups on this system.
func (c *MemCgroup) Usage() (CgroupUsage, error) {
	return CgroupUsage{PeakBytes: -1}, errors.ErrUnsupported
}

// Remove fails: there are no cgroups on this system.
func (c *MemCgroup) Remove() error { return errors.ErrUnsupported }

// RemoveStale finds nothing: there are no cgroups on this system.
func (m *MemCgroups) RemoveStale() ([]string, error) { return nil, nil }
