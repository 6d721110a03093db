package nexmarkbench

import "github.com/ringstore/ringstore/bench"

// ModeNames lists every mode a run of o's queries can have and what each
// needs, without doing any work; the modes Run builds are among them
// (checked as it builds them).
func ModeNames(o Options) []bench.ModeInfo {
	var ms []bench.ModeInfo
	for _, q := range o.Queries {
		ms = append(ms, bench.ModeInfo{Name: q + "-on", Needs: "io_uring; --regime default or both"}, bench.ModeInfo{Name: q + "-off", Needs: "--regime default or both"})
	}
	large := o.LargeQueries
	if len(large) == 0 {
		large = o.Queries
	}
	for _, q := range large {
		for _, m := range largeModes {
			if m.stateful && !isStateful(q) {
				continue
			}
			ms = append(ms, bench.ModeInfo{Name: largePrefix + q + "-" + m.name, Needs: "io_uring; --regime large or both"})
		}
	}
	for _, b := range deviceBatches {
		ms = append(ms, bench.ModeInfo{Name: deviceMode(b), Needs: "io_uring; --regime large or both"})
	}
	return ms
}
