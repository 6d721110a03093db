package kvbench

import "github.com/ringstore/ringstore/bench"

// ModeNames lists every mode a run can have and what each needs, without
// doing any work; the modes Run builds are among them (checked as it
// builds them).
func ModeNames(Options) []bench.ModeInfo {
	const pebble = "Pebble, built from bench/peers (go on PATH, no --no-peers)"
	return []bench.ModeInfo{
		{Name: nameMultiGetURing, Needs: "io_uring"}, {Name: nameMultiGetSyscall}, {Name: nameGet64URing, Needs: "io_uring"},
		{Name: nameDevice, Needs: "io_uring"}, {Name: nameMultiGetHot, Needs: "io_uring"},
		{Name: namePebbleSerial, Needs: pebble}, {Name: namePebbleParallel, Needs: pebble},
	}
}
