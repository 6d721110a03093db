package bench

import (
	"strings"
	"testing"
)

func TestSelection(t *testing.T) {
	modes := []Mode{{Name: "serial-pread"}, {Name: "uring-b1"}, {Name: "uring-b64"}, {Name: "fio-qd64"}}
	names := func(ms []Mode) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Name)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct{ sel, want, err string }{
		{"", "serial-pread,uring-b1,uring-b64,fio-qd64", ""},
		{"uring-*", "uring-b1,uring-b64", ""},
		{" uring-b64 , serial-pread ", "serial-pread,uring-b64", ""},
		{"uring-b64,nope", "", `"nope" matches no mode of this run (its modes: serial-pread, uring-b1, uring-b64, fio-qd64)`},
		{"[", "", `bad pattern "["`},
	} {
		got, err := Selection(c.sel).Select("read", modes)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.sel, err, c.err)
			}
			continue
		}
		if err != nil || names(got) != c.want {
			t.Errorf("%q: %s, %v; want %s", c.sel, names(got), err, c.want)
		}
	}
}

// TestCheckListed: a mode the listing lacks is an error naming it.
func TestCheckListed(t *testing.T) {
	listed := []ModeInfo{{Name: "a"}, {Name: "b", Needs: "io_uring"}}
	if err := CheckListed("w", []string{"b", "a"}, listed); err != nil {
		t.Error(err)
	}
	if err := CheckListed("w", []string{"a", "c"}, listed); err == nil || !strings.Contains(err.Error(), `bench w: mode "c" is missing`) {
		t.Errorf("an unlisted mode: %v", err)
	}
}
