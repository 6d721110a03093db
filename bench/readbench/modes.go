package readbench

import (
	"fmt"

	"github.com/ringstore/ringstore/bench"
)

// ModeNames lists every mode a run can have and what each needs, without
// doing any work; the modes Run builds are among them (checked as it
// builds them).
func ModeNames(Options) []bench.ModeInfo {
	ms := []bench.ModeInfo{{Name: "serial-pread"}, {Name: "parallel-pread"}}
	for _, b := range []int{1, 8, 64, 256} {
		ms = append(ms, bench.ModeInfo{Name: fmt.Sprintf("uring-b%d", b), Needs: "io_uring"})
	}
	return append(ms,
		bench.ModeInfo{Name: "uring-4x16", Needs: "io_uring"},
		bench.ModeInfo{Name: "uring-inline-b64", Needs: "io_uring"},
		bench.ModeInfo{Name: "sqpoll-b64", Needs: "io_uring with SQPOLL"},
		bench.ModeInfo{Name: "fio-qd64", Needs: "fio on PATH, no --no-fio"},
		bench.ModeInfo{Name: "fio-qd64-batch", Needs: "fio on PATH, no --no-fio"})
}
