//go:build !race

package gokastore

const raceEnabled = false
