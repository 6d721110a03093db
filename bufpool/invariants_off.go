//go:build !invariants && !race

package bufpool

// invariantsOn: see invariants_on.go.
const invariantsOn = false
