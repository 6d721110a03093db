package kv

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// Child process of TestDirectArenaRefused.
const (
	arenaChildEnv = "RINGSTORE_KV_ARENA_CHILD"
	arenaChildOK  = "arena-refused-child-ok "
)

// TestDirectArenaRefused runs a child process of this test binary without
// CAP_IPC_LOCK and with RLIMIT_MEMLOCK at 64 KiB: the real kernel refuses
// to register the store's arena for reads past the cache with ENOMEM. Open
// says why, once, through Logf; Stats carries the reason; the reads (every
// read of a store without a cache) go into Go memory, none as READ_FIXED,
// every value right.
func TestDirectArenaRefused(t *testing.T) {
	if os.Getenv(arenaChildEnv) == "1" {
		arenaRefusedChild(t)
		return
	}
	testchild.RunWithoutIPCLock(t, "^TestDirectArenaRefused$", []string{arenaChildEnv + "=1"}, arenaChildOK)
}

func arenaRefusedChild(t *testing.T) {
	testchild.RequireNoIPCLock(t)
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}); err != nil {
		t.Fatalf("setrlimit RLIMIT_MEMLOCK: %v", err)
	}
	eng := testengine.New(t, ioengine.URing, ioengine.Options{})
	if eng.Backend() != ioengine.BackendURing {
		t.Skip("io_uring refused: nothing is registered on the syscall backend")
	}
	var mu sync.Mutex
	var logged []string
	logf := func(f string, a ...any) {
		if line := fmt.Sprintf(f, a...); strings.Contains(line, "past the block cache") {
			mu.Lock()
			logged = append(logged, line)
			mu.Unlock()
		}
	}
	db, err := Open(testdir.Direct(t), Options{Engine: eng, NoBlockCache: true, Unsafe: UnsafeOptions{NoSync: true}, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Stats()
	if st.DirectFixed || !strings.Contains(st.DirectFixedOff, "RLIMIT_MEMLOCK") || !strings.Contains(st.DirectFixedOff, unix.ENOMEM.Error()) {
		t.Fatalf("DirectFixed %v, DirectFixedOff %q; want false and the RLIMIT_MEMLOCK refusal (ENOMEM)", st.DirectFixed, st.DirectFixedOff)
	}
	mu.Lock()
	if len(logged) != 1 || !strings.Contains(logged[0], st.DirectFixedOff) {
		t.Fatalf("logged %q; want one line with the reason", logged)
	}
	mu.Unlock()
	var b Batch
	keys := make([][]byte, 500)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%06d", i*7)
		b.Put(keys[i], fmt.Appendf(nil, "value of %d", i*7))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	before := db.Stats()
	vals, found, err := db.MultiGet(keys)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if want := fmt.Sprintf("value of %d", i*7); !found[i] || string(vals[i]) != want {
			t.Fatalf("%s: %q (found %v), want %q", keys[i], vals[i], found[i], want)
		}
	}
	after := db.Stats()
	if after.BlockReads == before.BlockReads {
		t.Fatalf("the MultiGet read no block")
	}
	if n := after.Engine.FixedTransfers - before.Engine.FixedTransfers; n != 0 {
		t.Fatalf("%d reads as READ_FIXED without registered memory", n)
	}
	fmt.Printf("%sreason: %s\n", arenaChildOK, st.DirectFixedOff)
}
