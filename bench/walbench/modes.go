package walbench

import (
	"fmt"

	"github.com/ringstore/ringstore/bench"
)

// ModeNames lists every mode a run can have and what each needs, without
// doing any work; the modes Run builds are among them (checked as it
// builds them).
func ModeNames(Options) []bench.ModeInfo {
	ms := []bench.ModeInfo{{Name: modeFsync}, {Name: modeDevice}, {Name: modeDeviceGroup}, {Name: modeDeviceAdvance}, {Name: modeDeviceWritten},
		{Name: modeDeviceGroupURing, Needs: "io_uring"}, {Name: modeDeviceAdvanceURing, Needs: "io_uring"}, {Name: modeDeviceWrittenURing, Needs: "io_uring"},
		{Name: modeDeviceAdvanceURing2, Needs: "io_uring"}}
	for _, w := range []int{1, 16, 64, 256} {
		ms = append(ms, bench.ModeInfo{Name: fmt.Sprintf("ringstore-uring-w%d", w), Needs: "io_uring"})
	}
	ms = append(ms, bench.ModeInfo{Name: mode64Steady, Needs: "io_uring"}, bench.ModeInfo{Name: mode64Recycled, Needs: "io_uring"},
		bench.ModeInfo{Name: "ringstore-sqpoll-w64", Needs: "io_uring with SQPOLL"})
	for _, w := range []int{1, 64} {
		ms = append(ms, bench.ModeInfo{Name: fmt.Sprintf("kv-uring-w%d", w), Needs: "io_uring"})
	}
	ms = append(ms, bench.ModeInfo{Name: mode64LSM, Needs: "io_uring"})
	ms = append(ms, bench.ModeInfo{Name: "ringstore-syscall-w64"}, bench.ModeInfo{Name: mode64SyscallRecycled})
	const peersNeed = "the peers, built from bench/peers (go on PATH, no --no-peers)"
	for _, p := range Peers {
		for _, w := range []int{1, 64} {
			ms = append(ms, bench.ModeInfo{Name: PeerModeName(p, w, false), Needs: peersNeed})
		}
		ms = append(ms, bench.ModeInfo{Name: PeerModeName(p, PeerBatchWriters, true), Needs: peersNeed})
	}
	return ms
}
