package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeHierarchy lays out files as a cgroup file system would show them,
// under a temporary directory, and returns mountinfo lines for it.
func fakeHierarchy(t *testing.T, files map[string]string) (root string) {
	t.Helper()
	root = t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDetectMemCgroupsChoosesAWorkingHierarchy(t *testing.T) {
	root := fakeHierarchy(t, map[string]string{
		"unified/job/cgroup.controllers":       "cpu io memory pids\n",
		"unified/job/cgroup.subtree_control":   "memory pids\n",
		"unified/off/cgroup.controllers":       "cpu io memory\n",
		"unified/off/cgroup.subtree_control":   "cpu\n",
		"unified/bound/cgroup.controllers":     "\n",
		"unified/bound/cgroup.subtree_control": "\n",
		"memory/job/memory.limit_in_bytes":     "9223372036854771712\n",
		"memory/sub/memory.limit_in_bytes":     "9223372036854771712\n",
		"memory/nolimitfile/cgroup.procs":      "",
	})
	mi := func(memRoot string) string {
		return fmt.Sprintf("34 30 0:31 %s %s/memory rw - cgroup cgroup rw,memory\n40 30 0:37 / %s/unified rw - cgroup2 cgroup2 rw\n", memRoot, root, root)
	}
	for _, c := range []struct {
		name, self, mountinfo string
		version               int
		parent                string
		errs                  []string
	}{
		{"v2 with memory for children", "0::/job\n", mi("/"), 2, root + "/unified/job", nil},
		{"v2 controller not enabled, v1 works", "4:memory:/job\n0::/off\n", mi("/"), 1, root + "/memory/job", nil},
		{"v2 controller bound to v1", "4:memory:/job\n0::/bound\n", mi("/"), 1, root + "/memory/job", nil},
		{"v1 mount rooted at the container's cgroup", "4:memory:/ctr/sub\n", mi("/ctr"), 1, root + "/memory/sub", nil},
		{"neither", "4:memory:/nolimitfile\n0::/off\n", mi("/"), 0, "", []string{"cgroup v2: memory controller not enabled for the children of", "cgroup v1:", "memory.limit_in_bytes"}},
		{"no mounts", "4:memory:/job\n0::/job\n", "", 0, "", []string{"no cgroup2 file system is mounted", "the v1 memory controller is not mounted"}},
		{"no cgroups at all", "", mi("/"), 0, "", []string{`no "0::" line`, "no memory line"}},
		{"outside the mount", "4:memory:/elsewhere\n", mi("/ctr"), 0, "", []string{"outside the memory mount"}},
	} {
		m, err := detectMemCgroups(c.self, c.mountinfo)
		if c.version == 0 {
			if err == nil {
				t.Errorf("%s: detected %v, want an error", c.name, m)
				continue
			}
			if !errors.Is(err, ErrNoMemCgroup) {
				t.Errorf("%s: error %v does not wrap ErrNoMemCgroup", c.name, err)
			}
			for _, s := range c.errs {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: error %q does not say %q", c.name, err, s)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.Version != c.version || m.Parent != c.parent {
			t.Errorf("%s: got %v, want v%d under %s", c.name, m, c.version, c.parent)
		}
		if (m.Version == 1) != (m.NotV2 != "") {
			t.Errorf("%s: v%d with the reason for not using v2 %q", c.name, m.Version, m.NotV2)
		}
	}
}

func TestMemCgroupNewRejectsBadLimits(t *testing.T) {
	m := &MemCgroups{Version: 2, Parent: t.TempDir()}
	for _, l := range []int64{0, -5} {
		if _, err := m.New(l); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("limit %d: %v", l, err)
		}
	}
}

// realCgroups returns the machine's memory cgroups, or skips.
func realCgroups(t *testing.T) *MemCgroups {
	t.Helper()
	m, err := DetectMemCgroups()
	if err != nil {
		t.Skipf("no memory cgroup here: %v", err)
	}
	return m
}

const helperEnv = "RINGSTORE_BENCH_CGROUP_HELPER"

// TestCgroupHelperProcess is not a test: it is the child the cgroup tests
// start (this test binary again), doing what RINGSTORE_BENCH_CGROUP_HELPER
// says inside the cgroup named by RINGSTORE_BENCH_CGROUP_DIR.
func TestCgroupHelperProcess(t *testing.T) {
	what := os.Getenv(helperEnv)
	if what == "" {
		t.Skip("helper process only")
	}
	if err := JoinMemCgroup(os.Getenv("RINGSTORE_BENCH_CGROUP_DIR")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	switch what {
	case "read":
		// Read a file through the page cache, cold: its pages are charged
		// to this cgroup and must be reclaimed within the limit.
		f, err := os.Open(os.Getenv("RINGSTORE_BENCH_CGROUP_FILE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		buf := make([]byte, 1<<20)
		var n int64
		for {
			k, err := f.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		fmt.Printf("read %d\n", n)
	case "alloc":
		var keep [][]byte
		for i := 0; i < 1024; i++ { // up to 1 GiB, far above the limit
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Printf("allocated %d MiB and was not killed\n", len(keep))
	}
	os.Exit(0)
}

func runHelper(t *testing.T, c *MemCgroup, what string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + what, "RINGSTORE_BENCH_CGROUP_DIR=" + c.Path}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestMemCgroupLimitsThePageCacheOfAChild(t *testing.T) {
	m := realCgroups(t)
	const limit = 32 << 20
	c, err := m.New(limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove() })
	if c.Limit != limit || c.Version != m.Version || filepath.Dir(c.Path) != m.Parent {
		t.Fatalf("made %+v, want limit %d under %s", c, limit, m.Parent)
	}
	// A file three times the limit, dropped from the page cache so that the
	// child's reads charge the cgroup.
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, make([]byte, 3*limit), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := runHelper(t, c, "read", "RINGSTORE_BENCH_CGROUP_FILE="+file)
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(out, "read "+strconv.Itoa(3*limit)) {
		t.Fatalf("helper did not read the whole file: %s", out)
	}
	u, err := c.Usage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %+v", c.Path, u)
	// The page cache is charged to the child's cgroup and reclaimed there:
	// the peak reaches the limit (not less: the reads were cold) and stays
	// under it. LimitHits is whatever the kernel counts (v1's failcnt stays
	// 0 on some kernels while reclaim holds the usage at the limit).
	// (v1's max_usage_in_bytes was seen one page above the limit.)
	if u.PeakBytes >= 0 && (u.PeakBytes > limit+int64(os.Getpagesize()) || u.PeakBytes < limit*3/4) {
		t.Errorf("peak %d bytes: want the page cache charged up to the limit %d and no more", u.PeakBytes, limit)
	}
	if u.OOMKills != 0 {
		t.Errorf("page cache pressure killed a process: %+v", u)
	}
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after Remove: %v", c.Path, err)
	}
	if err := c.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestMemCgroupKillsAChildOverItsLimit(t *testing.T) {
	m := realCgroups(t)
	c, err := m.New(48 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	out, err := runHelper(t, c, "alloc")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("a child touching 1 GiB under a 48 MiB limit ended with %v, want SIGKILL\n%s", err, out)
	}
	u, err := c.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.OOMKills == 0 {
		t.Errorf("the kill is not counted: %+v", u)
	}
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
}

func TestMemCgroupRemoveStale(t *testing.T) {
	m := realCgroups(t)
	// A pid that has exited: a process we ran and waited for.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dead := cmd.Process.Pid
	stale := filepath.Join(m.Parent, fmt.Sprintf("%s%d-1", CgroupPrefix, dead))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	defer unix.Rmdir(stale)
	mine, err := m.New(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Remove()
	removed, err := m.RemoveStale()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("removed %v, want only %s", removed, stale)
	}
	if _, err := os.Stat(mine.Path); err != nil {
		t.Errorf("this process's own cgroup was removed: %v", err)
	}
}
