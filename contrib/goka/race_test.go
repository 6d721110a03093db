//go:build race

package gokastore

// raceEnabled: the race detector slows each Get tenfold, so goroutines
// rarely meet in the ring; timing-dependent checks skip under it.
const raceEnabled = true
