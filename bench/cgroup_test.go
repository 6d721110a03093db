package bench

import (
	"reflect"
	"strings"
	"testing"
)

const mountinfoHybrid = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestProcCgroupPaths(t *testing.T) {
	for _, c := range []struct{ name, data, v2, v1 string }{
		{"hybrid", "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n", "/", "/process_api/abc"},
		{"v2 only", "0::/user.slice/session-1.scope\n", "/user.slice/session-1.scope", ""},
		{"v1 joined controllers", "5:cpuacct,memory,cpu:/docker/xyz\n", "", "/docker/xyz"},
		{"memory as a name= hierarchy is not the controller", "3:name=memory:/x\n", "", ""},
		{"garbage", "nonsense\n::\n", "", ""},
		{"empty", "", "", ""},
	} {
		v2, v1 := procCgroupPaths(c.data)
		if v2 != c.v2 || v1 != c.v1 {
			t.Errorf("%s: got v2 %q v1 %q, want %q %q", c.name, v2, v1, c.v2, c.v1)
		}
	}
}

func TestCgroupMounts(t *testing.T) {
	ms := cgroupMounts(mountinfoHybrid + "41 30 0:38 /a\\040b /mnt/with\\040space rw - cgroup2 none rw\nbroken line\n")
	want := []cgroupMount{
		{Root: "/", Point: "/sys/fs/cgroup/cpu", FSType: "cgroup", Super: []string{"rw", "cpu"}},
		{Root: "/", Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Super: []string{"rw", "memory"}},
		{Root: "/", Point: "/sys/fs/cgroup/systemd", FSType: "cgroup", Super: []string{"rw", "name=systemd"}},
		{Root: "/", Point: "/sys/fs/cgroup/unified", FSType: "cgroup2", Super: []string{"rw"}},
		{Root: "/a b", Point: "/mnt/with space", FSType: "cgroup2", Super: []string{"rw"}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("got %+v\nwant %+v", ms, want)
	}
}

func TestCgroupDir(t *testing.T) {
	for _, c := range []struct {
		root, point, cg, want string
		ok                    bool
	}{
		{"/", "/sys/fs/cgroup/memory", "/process_api/abc", "/sys/fs/cgroup/memory/process_api/abc", true},
		{"/", "/sys/fs/cgroup", "/", "/sys/fs/cgroup", true},
		{"/docker/xyz", "/sys/fs/cgroup/memory", "/docker/xyz", "/sys/fs/cgroup/memory", true},
		{"/docker/xyz", "/sys/fs/cgroup/memory", "/docker/xyz/child", "/sys/fs/cgroup/memory/child", true},
		{"/docker/xyz", "/sys/fs/cgroup/memory", "/docker/xyzzy", "", false},
		{"/docker/xyz", "/sys/fs/cgroup/memory", "/other", "", false},
		{"/", "/sys/fs/cgroup", "/../../etc", "/sys/fs/cgroup/etc", true},
	} {
		got, ok := cgroupDir(cgroupMount{Root: c.root, Point: c.point}, c.cg)
		if got != c.want || ok != c.ok {
			t.Errorf("root %s point %s cgroup %s: got %q %v, want %q %v", c.root, c.point, c.cg, got, ok, c.want, c.ok)
		}
	}
}

func TestParseCgroupFiles(t *testing.T) {
	ev := parseKeyedCounters("low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\nbad x\n\n")
	if ev["max"] != 17 || ev["oom"] != 2 || ev["oom_kill"] != 1 || len(ev) != 6 {
		t.Errorf("memory.events parsed as %v", ev)
	}
	oc := parseKeyedCounters("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	if oc["oom_kill"] != 3 {
		t.Errorf("memory.oom_control parsed as %v", oc)
	}
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{{"536870912\n", 536870912, true}, {"max\n", -1, true}, {"", 0, false}, {"12k", 0, false}} {
		got, err := parseLimit(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("parseLimit(%q) = %d, %v", c.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "not a limit") {
			t.Errorf("parseLimit(%q): unclear error %v", c.in, err)
		}
	}
}

func FuzzCgroupParsers(f *testing.F) {
	f.Add("4:memory:/a\n0::/b\n", mountinfoHybrid, "max 1\n")
	f.Add("", "1 2 3 4 5 6 - cgroup2", "")
	f.Add("0::", `1 2 0:1 /\0 /x\04 rw - cgroup a rw,memory`, "a b c")
	f.Fuzz(func(t *testing.T, self, mountinfo, events string) {
		v2, v1 := procCgroupPaths(self)
		for _, m := range cgroupMounts(mountinfo) {
			if m.FSType != "cgroup" && m.FSType != "cgroup2" {
				t.Fatalf("mount of type %q kept", m.FSType)
			}
			for _, p := range []string{v2, v1} {
				if d, ok := cgroupDir(m, p); ok && !strings.HasPrefix(d, strings.TrimSuffix(m.Point, "/")) && m.Point != "" {
					t.Fatalf("cgroup %q of mount %+v resolved outside it: %q", p, m, d)
				}
			}
		}
		parseKeyedCounters(events)
		parseLimit(events)
	})
}
