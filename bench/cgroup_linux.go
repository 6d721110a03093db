package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DetectMemCgroups finds where memory-limited cgroups can be made for child
// processes: below this process's own cgroup, on cgroup v2 when its memory
// controller is enabled for children there, else on cgroup v1's memory
// hierarchy. The error wraps ErrNoMemCgroup and gives the reason for each
// hierarchy (not mounted, controller not enabled, no permission, read-only).
func DetectMemCgroups() (*MemCgroups, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMemCgroup, err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoMemCgroup, err)
	}
	return detectMemCgroups(string(self), string(mi))
}

// detectMemCgroups is DetectMemCgroups on the contents of /proc/self/cgroup
// and /proc/self/mountinfo.
func detectMemCgroups(procCgroup, mountinfo string) (*MemCgroups, error) {
	v2Path, v1Path := procCgroupPaths(procCgroup)
	mounts := cgroupMounts(mountinfo)
	m, err2 := detectV2(v2Path, mounts)
	if err2 == nil {
		return m, nil
	}
	m, err1 := detectV1(v1Path, mounts)
	if err1 == nil {
		m.NotV2 = err2.Error()
		return m, nil
	}
	return nil, fmt.Errorf("%w: cgroup v2: %v; cgroup v1: %v", ErrNoMemCgroup, err2, err1)
}

func detectV2(cg string, mounts []cgroupMount) (*MemCgroups, error) {
	if cg == "" {
		return nil, errors.New(`this process is in no v2 cgroup (no "0::" line in /proc/self/cgroup)`)
	}
	i := slices.IndexFunc(mounts, func(m cgroupMount) bool { return m.FSType == "cgroup2" })
	if i < 0 {
		return nil, errors.New("no cgroup2 file system is mounted")
	}
	dir, ok := cgroupDir(mounts[i], cg)
	if !ok {
		return nil, fmt.Errorf("own cgroup %s is outside the cgroup2 mount at %s (root %s)", cg, mounts[i].Point, mounts[i].Root)
	}
	ctrls, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(strings.Fields(string(ctrls)), "memory") {
		return nil, fmt.Errorf("memory controller not available in %s (cgroup.controllers: %q; it may be bound to the v1 hierarchy)", dir, strings.TrimSpace(string(ctrls)))
	}
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	if !slices.Contains(strings.Fields(string(sub)), "memory") {
		return nil, fmt.Errorf("memory controller not enabled for the children of %s (cgroup.subtree_control: %q; the benchmark does not change it)", dir, strings.TrimSpace(string(sub)))
	}
	if err := writable(dir); err != nil {
		return nil, err
	}
	return &MemCgroups{Version: 2, Parent: dir}, nil
}

func detectV1(cg string, mounts []cgroupMount) (*MemCgroups, error) {
	if cg == "" {
		return nil, errors.New("this process is in no v1 memory cgroup (no memory line in /proc/self/cgroup)")
	}
	i := slices.IndexFunc(mounts, func(m cgroupMount) bool { return m.FSType == "cgroup" && slices.Contains(m.Super, "memory") })
	if i < 0 {
		return nil, errors.New("the v1 memory controller is not mounted")
	}
	dir, ok := cgroupDir(mounts[i], cg)
	if !ok {
		return nil, fmt.Errorf("own cgroup %s is outside the memory mount at %s (root %s)", cg, mounts[i].Point, mounts[i].Root)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err != nil {
		return nil, err
	}
	if err := writable(dir); err != nil {
		return nil, err
	}
	return &MemCgroups{Version: 1, Parent: dir}, nil
}

func writable(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return &os.PathError{Op: "access for writing", Path: dir, Err: err}
	}
	return nil
}

var cgroupSeq atomic.Uint64

// New makes a cgroup below m.Parent named CgroupPrefix<pid>-<n> with a
// memory limit of limit bytes (and no swap beyond it where the kernel has the
// knob), and reads the limit back. Remove it after its processes exited.
func (m *MemCgroups) New(limit int64) (*MemCgroup, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("bench: cgroup memory limit must be positive, got %d", limit)
	}
	dir := filepath.Join(m.Parent, fmt.Sprintf("%s%d-%d", CgroupPrefix, os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: make cgroup: %w", err)
	}
	c := &MemCgroup{Version: m.Version, Path: dir}
	if err := c.setLimit(limit); err != nil {
		if rerr := c.Remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return c, nil
}

func (c *MemCgroup) setLimit(limit int64) error {
	s := strconv.FormatInt(limit, 10)
	limitFile, swapFile, swapValue := "memory.max", "memory.swap.max", "0"
	if c.Version == 1 {
		// memsw is memory + swap, so it must be at least the limit, and it
		// can only be raised after the limit is.
		limitFile, swapFile, swapValue = "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", s
	}
	if err := writeCgroupFile(c.Path, limitFile, s); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.Path, swapFile)); err == nil {
		if err := writeCgroupFile(c.Path, swapFile, swapValue); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(filepath.Join(c.Path, limitFile))
	if err != nil {
		return fmt.Errorf("bench: read back cgroup limit: %w", err)
	}
	got, err := parseLimit(string(data))
	if err != nil {
		return fmt.Errorf("bench: %s/%s: %v", c.Path, limitFile, err)
	}
	// The kernel rounds the limit down to a page.
	if got < 0 || got > limit || limit-got >= int64(os.Getpagesize()) {
		return fmt.Errorf("bench: %s/%s holds %d after writing %d", c.Path, limitFile, got, limit)
	}
	c.Limit = got
	return nil
}

func writeCgroupFile(dir, name, value string) error {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("bench: cgroup: %w", err)
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("bench: cgroup: write %q to %s: %w", value, p, werr)
	}
	if cerr != nil {
		return fmt.Errorf("bench: cgroup: %w", cerr)
	}
	return nil
}

// JoinMemCgroup moves the calling process, all its threads, into the cgroup
// at dir (made by MemCgroups.New in the parent), and checks that
// /proc/self/cgroup then names it. A child calls it first thing: memory the
// process used before stays charged where it was.
func JoinMemCgroup(dir string) error {
	if err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("bench: cgroup: %w", err)
	}
	v2, v1 := procCgroupPaths(string(self))
	base := filepath.Base(dir)
	if filepath.Base(v2) != base && filepath.Base(v1) != base {
		return fmt.Errorf("bench: cgroup: joined %s, but /proc/self/cgroup says %q", dir, strings.TrimSpace(string(self)))
	}
	return nil
}

// Usage reads the cgroup's peak memory and its limit and OOM counters.
func (c *MemCgroup) Usage() (CgroupUsage, error) {
	u := CgroupUsage{PeakBytes: -1}
	read := func(name string) (string, error) {
		data, err := os.ReadFile(filepath.Join(c.Path, name))
		return string(data), err
	}
	if c.Version == 2 {
		if s, err := read("memory.peak"); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return u, fmt.Errorf("bench: %s/memory.peak: not a number: %q", c.Path, s)
			}
			u.PeakBytes = n
		} else if !errors.Is(err, os.ErrNotExist) {
			return u, fmt.Errorf("bench: cgroup: %w", err)
		}
		s, err := read("memory.events")
		if err != nil {
			return u, fmt.Errorf("bench: cgroup: %w", err)
		}
		ev := parseKeyedCounters(s)
		u.LimitHits, u.OOMKills = ev["max"], ev["oom_kill"]
		return u, nil
	}
	s, err := read("memory.max_usage_in_bytes")
	if err != nil {
		return u, fmt.Errorf("bench: cgroup: %w", err)
	}
	if u.PeakBytes, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
		return u, fmt.Errorf("bench: %s/memory.max_usage_in_bytes: not a number: %q", c.Path, s)
	}
	if s, err = read("memory.failcnt"); err != nil {
		return u, fmt.Errorf("bench: cgroup: %w", err)
	}
	if u.LimitHits, err = strconv.ParseUint(strings.TrimSpace(s), 10, 64); err != nil {
		return u, fmt.Errorf("bench: %s/memory.failcnt: not a number: %q", c.Path, s)
	}
	if s, err = read("memory.oom_control"); err == nil {
		u.OOMKills = parseKeyedCounters(s)["oom_kill"]
	}
	return u, nil
}

// Remove deletes the cgroup. Its processes must have exited; the kernel may
// take a moment to let go of the last one (EBUSY), so Remove tries again
// for up to five seconds. Removing a cgroup that is gone already is not an
// error.
func (c *MemCgroup) Remove() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Rmdir(c.Path)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		if err != unix.EBUSY || time.Now().After(deadline) {
			return fmt.Errorf("bench: remove cgroup: %w", &os.PathError{Op: "rmdir", Path: c.Path, Err: err})
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemoveStale removes cgroups that an earlier run left below m.Parent: those
// named CgroupPrefix<pid>-<n> whose pid is no longer alive and that hold no
// process. It returns the directories it removed.
func (m *MemCgroups) RemoveStale() ([]string, error) {
	ents, err := os.ReadDir(m.Parent)
	if err != nil {
		return nil, fmt.Errorf("bench: cgroup: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), CgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		dir := filepath.Join(m.Parent, e.Name())
		if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || strings.TrimSpace(string(procs)) != "" {
			continue
		}
		if err := unix.Rmdir(dir); err != nil {
			errs = append(errs, &os.PathError{Op: "rmdir", Path: dir, Err: err})
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}
