package ioengine

import "testing"

// FuzzParseSwitch checks the rule of DESIGN.md for every byte string: only
// an unset variable or exactly "true" enables io_uring.
func FuzzParseSwitch(f *testing.F) {
	for _, s := range []string{"true", "false", "", "TRUE", "1", " true", "true\n", "\xff\xfe"} {
		f.Add(s, true)
	}
	f.Add("", false)
	f.Fuzz(func(t *testing.T, v string, set bool) {
		sw := parseSwitch(v, set)
		want := !set || v == "true"
		if sw.Enabled != want {
			t.Fatalf("parseSwitch(%q, %v).Enabled = %v, want %v", v, set, sw.Enabled, want)
		}
		if sw.String() == "" {
			t.Fatal("empty description")
		}
	})
}
