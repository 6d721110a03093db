package ioengine

import (
	"errors"
	"strings"
	"testing"
)

// TestKernelProbeUsable: each reason a process cannot use io_uring is
// named, in the order the engine meets them; a probe with none is usable.
func TestKernelProbeUsable(t *testing.T) {
	for _, c := range []struct {
		p    KernelProbe
		ok   bool
		want string
	}{
		{KernelProbe{NotCompiled: "built with ringstore_nouring"}, false, "ringstore_nouring"},
		{KernelProbe{Compiled: true, SetupError: errors.New("blocked by seccomp")}, false, "seccomp"},
		{KernelProbe{Compiled: true}, false, "no ring could be set up"},
		{KernelProbe{Compiled: true, Available: true, SelfTestError: errors.New("short read")}, false, "self-test failed: short read"},
		{KernelProbe{Compiled: true, Available: true}, true, ""},
	} {
		ok, why := c.p.Usable()
		if ok != c.ok || !strings.Contains(why, c.want) || (c.ok && why != "") {
			t.Errorf("%+v: Usable() = %v, %q; want %v, %q", c.p, ok, why, c.ok, c.want)
		}
	}
}
