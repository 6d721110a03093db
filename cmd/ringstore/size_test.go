package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "1GiB": 1 << 30, "512M": 512 << 20, "1g": 1 << 30, "1.5KiB": 1536, " 2 MB ": 2 << 20, "10b": 10} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1", "0", "abc", "1XB", "1e30", "NaN", "Inf"} {
		if v, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, v)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1GiB", "512M", "4096", "0.5k", "-3", "1e3t", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSize(s)
		if err == nil && (v <= 0 || v > 1<<50) {
			t.Fatalf("parseSize(%q) = %d without error", s, v)
		}
	})
}
