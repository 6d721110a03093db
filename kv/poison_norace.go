//go:build !race

package kv

const poisonValues = false
