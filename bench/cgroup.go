package bench

// Memory cgroups for benchmark children: a benchmark that must show what
// happens when data does not fit in memory runs each child under a memory
// limit of its own. The parent finds where it may make cgroups
// (DetectMemCgroups), makes one per child (MemCgroups.New), the child moves
// itself in first thing (JoinMemCgroup), and after the child has exited the
// parent reads what it used (MemCgroup.Usage) and removes it
// (MemCgroup.Remove).
//
// Both hierarchies are supported:
//
//	v2  <cgroup2 mount>/<own cgroup>/ringstore-bench-<pid>-<n>/
//	        memory.max      the limit (memory.swap.max set to 0 when present)
//	        memory.peak     peak usage, page cache included (Linux 5.19+)
//	        memory.events   max (limit reached), oom, oom_kill
//	v1  <memory mount>/<own cgroup>/ringstore-bench-<pid>-<n>/
//	        memory.limit_in_bytes        the limit (memsw too when present)
//	        memory.max_usage_in_bytes    peak usage, page cache included
//	        memory.failcnt               times the limit was hit
//	        memory.oom_control           oom_kill count
//
// Children are made below the cgroup the benchmark itself runs in, so they
// stay inside every limit that applies to it. On v2 the memory controller
// must already be enabled in that cgroup's cgroup.subtree_control: the
// benchmark does not change a cgroup it did not make.

import (
	"bufio"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ErrNoMemCgroup is wrapped by the error of DetectMemCgroups when no memory
// cgroup can be made; the error says why for each hierarchy.
var ErrNoMemCgroup = errors.New("bench: no memory cgroup can be made")

// CgroupPrefix starts the name of every cgroup MemCgroups.New makes:
// ringstore-bench-<pid of the parent>-<n>.
const CgroupPrefix = "ringstore-bench-"

// MemCgroups is a place where memory-limited cgroups can be made: a
// directory of a mounted cgroup hierarchy whose memory controller works for
// its children. Immutable after DetectMemCgroups.
type MemCgroups struct {
	Version int    // 1 or 2
	Parent  string // directory the children are made in
	// NotV2 says why cgroup v2 was not used when Version is 1.
	NotV2 string
}

func (m *MemCgroups) String() string {
	return fmt.Sprintf("cgroup v%d under %s", m.Version, m.Parent)
}

// MemCgroup is one cgroup made by MemCgroups.New. Immutable; Remove it once
// its processes have exited.
type MemCgroup struct {
	Version int
	Path    string // the cgroup's directory
	Limit   int64  // the limit in bytes as the kernel reports it back
}

// CgroupUsage is what a cgroup's processes used, read after they exited.
type CgroupUsage struct {
	// PeakBytes is the highest memory charge seen, page cache included
	// (v2 memory.peak, v1 memory.max_usage_in_bytes); -1 when the kernel
	// does not report it (v2 before Linux 5.19).
	PeakBytes int64 `json:"peak_bytes"`
	// LimitHits counts how often the limit was reached (v2 memory.events
	// "max", v1 memory.failcnt): reclaim under pressure.
	LimitHits uint64 `json:"limit_hits"`
	// OOMKills counts processes killed for want of memory.
	OOMKills uint64 `json:"oom_kills"`
}

// procCgroupPaths parses /proc/self/cgroup: for v2 the path of the "0::"
// line, for v1 the path of the line whose controller list names memory.
// Either is "" when absent.
func procCgroupPaths(data string) (v2, v1mem string) {
	for _, line := range strings.Split(data, "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && ctrls == "" {
			v2 = p
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c == "memory" {
				v1mem = p
			}
		}
	}
	return v2, v1mem
}

// cgroupMount is one cgroup file system from /proc/self/mountinfo.
type cgroupMount struct {
	Root, Point string // the mount's root inside the hierarchy, and where it is mounted
	FSType      string // cgroup or cgroup2
	Super       []string
}

// cgroupMounts parses the cgroup and cgroup2 mounts out of mountinfo.
func cgroupMounts(data string) []cgroupMount {
	var ms []cgroupMount
	sc := bufio.NewScanner(strings.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+3 >= len(f) {
			continue
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		ms = append(ms, cgroupMount{Root: unescapeMount(f[3]), Point: unescapeMount(f[4]), FSType: fstype, Super: strings.Split(f[sep+3], ",")})
	}
	return ms
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupDir joins a mount point and a cgroup path seen from
// /proc/self/cgroup, taking away the mount's root (a container sees its own
// cgroup mounted as "/" with root set to its path). ok is false when the
// path is not below the mount's root.
func cgroupDir(m cgroupMount, cgPath string) (string, bool) {
	root := path.Clean("/" + m.Root)
	p := path.Clean("/" + cgPath)
	if root != "/" {
		if p != root && !strings.HasPrefix(p, root+"/") {
			return "", false
		}
		p = strings.TrimPrefix(p, root)
	}
	return path.Join(m.Point, p), true
}

// parseKeyedCounters parses "key value" lines (memory.events,
// memory.oom_control, memory.stat).
func parseKeyedCounters(data string) map[string]uint64 {
	out := map[string]uint64{}
	for _, line := range strings.Split(data, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// parseLimit parses a limit file: a number of bytes, or "max" (v2) for no
// limit, returned as -1.
func parseLimit(data string) (int64, error) {
	s := strings.TrimSpace(data)
	if s == "max" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a limit: %q", s)
	}
	return n, nil
}
