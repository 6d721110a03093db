//go:build !linux

package memtable

// offHeap says New's memtables map their memory: not here, where they
// take Go memory.
const offHeap = false

// sysAlloc maps nothing here: memtables take Go memory.
func sysAlloc(int) []byte { return nil }

// sysFree is never called here.
func sysFree([]byte) {}
