//go:build invariants || race

package bufpool

// invariantsOn makes the pool check its invariants after every Pin and
// every completed engine call (builds with -tags invariants, and -race).
const invariantsOn = true
