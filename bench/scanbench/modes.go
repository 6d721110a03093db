package scanbench

import "github.com/ringstore/ringstore/bench"

// ModeNames lists every mode a run can have and what each needs, without
// doing any work; the modes Run builds are among them (checked as it
// builds them).
func ModeNames(Options) []bench.ModeInfo {
	var ms []bench.ModeInfo
	for _, m := range scanModes {
		ms = append(ms, bench.ModeInfo{Name: m.name})
	}
	return append(ms, bench.ModeInfo{Name: modeDevice}, bench.ModeInfo{Name: modeFio, Needs: "fio on PATH, no --no-fio"})
}
