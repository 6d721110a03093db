package scanbench

import (
	"strings"
	"testing"
)

const procIOSample = `rchar: 323934931
wchar: 323929600
syscr: 632687
syscw: 632675
read_bytes: 1048576
write_bytes: 323932160
cancelled_write_bytes: 0
`

func TestParseProcIO(t *testing.T) {
	p, err := parseProcIO(procIOSample)
	if err != nil {
		t.Fatal(err)
	}
	if p != (procIO{ReadBytes: 1048576, RChar: 323934931, WriteBytes: 323932160}) {
		t.Errorf("parsed %+v", p)
	}
	for _, c := range []struct{ in, want string }{
		{"rchar: 1\n", "missing read_bytes"},
		{strings.Replace(procIOSample, "1048576", "lots", 1), `read_bytes: not a number: "lots"`},
		{"", "missing"},
	} {
		if _, err := parseProcIO(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseProcIO(%q): %v, want an error saying %q", c.in, err, c.want)
		}
	}
}

func FuzzParseProcIO(f *testing.F) {
	f.Add(procIOSample)
	f.Add("read_bytes: -1\nrchar:0\nwrite_bytes:\n")
	f.Add("::\n:")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseProcIO(s)
		if err == nil && !strings.Contains(s, "read_bytes") {
			t.Fatalf("parsed %+v from %q without read_bytes", p, s)
		}
	})
}
