//go:build race

package kv

// poisonValues: under the race detector, ValueBuffer.Reset overwrites the
// values it held, so a caller that keeps one past Reset reads garbage in
// its tests rather than, now and then, another round's value.
const poisonValues = true
