package kv

// TestCrashProcess kills a process that is writing atomic batches to a DB,
// with SIGKILL at a random moment, and checks the store it left: every
// acknowledged batch is there, and no batch is visible in part. The same
// directory goes through several kill cycles, each child writing on the
// store the one before left; the memtable is small, so the kills land in
// flushes and compactions too (the child reports its counters).
//
// The child is this test binary, running TestCrashProcessChild with
// kvCrashDirEnv set. Each of its writers owns a key range of its own and
// writes batches one after another; batch i of writer w in cycle c is a
// function of (c, w, i) alone (crashBatchOps), every value naming its batch
// and key. So the parent can rebuild, for each writer, the state after any
// number of its batches, and the reopened store must show, for each writer,
// exactly the state after its acknowledged batches or after one more (the
// batch in flight at the kill): anything else is a lost acknowledged write
// or a half-applied batch, which the failure message names.
//
// A process crash keeps the page cache, so this checks the store's own
// ordering (acknowledge only what is logged, recover the log and the
// manifest, drop the files of an interrupted flush or compaction), not
// power loss.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

var kvCrashCycles = flag.Int("kv.crashcycles", 4, "kill cycles per I/O mode in TestCrashProcess")

// The child's instructions, in its environment.
const (
	kvCrashDirEnv   = "RINGSTORE_KV_CRASH_DIR"   // the store's directory; set only in the child
	kvCrashModeEnv  = "RINGSTORE_KV_CRASH_MODE"  // "uring" or "syscall"
	kvCrashCycleEnv = "RINGSTORE_KV_CRASH_CYCLE" // the cycle number, part of every value

	crashWriters    = 4
	crashKeysPerW   = 48 // keys each writer owns
	crashChildLife  = 30 * time.Second
	crashStatsEvery = 10 * time.Millisecond
)

var crashModes = []struct {
	name string
	mode ioengine.IOMode
}{{"uring", ioengine.URing}, {"syscall", ioengine.Syscall}}

func crashKey(w, k int) []byte { return []byte(fmt.Sprintf("w%d/k%03d", w, k)) }

// crashOp is one operation of a batch: a Put of value, or a Delete when
// value is nil.
type crashOp struct {
	key, value []byte
}

// crashBatchOps returns batch i of writer w in cycle c: 2 to 8 distinct keys
// of the writer's, about one in six deleted, each put value naming
// (c, w, i, key) and padded to 200–800 bytes.
func crashBatchOps(c uint64, w int, i uint64) []crashOp {
	r := rand.New(rand.NewPCG(c, uint64(w)<<40|i))
	n := 2 + r.IntN(7)
	perm := r.Perm(crashKeysPerW)[:n]
	ops := make([]crashOp, n)
	for j, k := range perm {
		key := crashKey(w, k)
		ops[j].key = key
		if r.IntN(6) == 0 {
			continue
		}
		v := fmt.Appendf(nil, "c%d/w%d/b%d/%s/", c, w, i, key)
		pad := 200 + r.IntN(600)
		for len(v) < pad {
			v = append(v, byte('a'+len(v)%26))
		}
		ops[j].value = v
	}
	return ops
}

// crashValueID returns the batch a value names ("c/w/b" and its key), for
// failure messages.
func crashValueID(v []byte) string {
	if v == nil {
		return "absent"
	}
	f := strings.SplitN(string(v), "/", 6)
	if len(f) < 5 {
		return fmt.Sprintf("%.40q (not a value this test writes)", v)
	}
	return fmt.Sprintf("cycle %s writer %s batch %s (key %s/%s)", f[0][1:], f[1][1:], f[2][1:], f[3], f[4])
}

// TestCrashProcessChild is the child of TestCrashProcess; it runs only in a
// child process and never returns there.
func TestCrashProcessChild(t *testing.T) {
	dir := os.Getenv(kvCrashDirEnv)
	if dir == "" {
		t.Skip("the child of TestCrashProcess: runs only in a child process")
	}
	os.Exit(crashChild(dir))
}

// The child's report lines:
//
//	R                         opened the store
//	A w i                     Write of writer w's batch i returned nil
//	S flushes compactions     the counters so far
//	E message                 the child failed (then it exits 3)
//
// Each is written with one write (testchild.Reporter).
func crashChild(dir string) int {
	rep := &testchild.Reporter{}
	fail := rep.Fail
	cycle, err := strconv.ParseUint(os.Getenv(kvCrashCycleEnv), 10, 64)
	if err != nil {
		return fail("%s: %v", kvCrashCycleEnv, err)
	}
	opts := crashOptions()
	opts.IOMode = ioengine.URing
	if os.Getenv(kvCrashModeEnv) == "syscall" {
		opts.IOMode = ioengine.Syscall
	}
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	db, err := Open(dir, opts)
	if err != nil {
		return fail("Open: %v", err)
	}
	rep.Line("R")
	errc := make(chan error, crashWriters)
	for w := range crashWriters {
		go func() {
			var b Batch
			for i := uint64(0); ; i++ {
				b.Reset()
				for _, op := range crashBatchOps(cycle, w, i) {
					if op.value == nil {
						b.Delete(op.key)
					} else {
						b.Put(op.key, op.value)
					}
				}
				if err := db.Write(&b); err != nil {
					errc <- fmt.Errorf("Write of writer %d batch %d: %w", w, i, err)
					return
				}
				rep.Line("A %d %d", w, i)
			}
		}()
	}
	tick := time.NewTicker(crashStatsEvery)
	defer tick.Stop()
	deadline := time.After(crashChildLife)
	for {
		select {
		case err := <-errc:
			return fail("%v", err)
		case <-tick.C:
			st := db.Stats()
			rep.Line("S %d %d", st.Flushes, st.Compactions+st.TrivialMoves)
		case <-deadline:
			return fail("not killed within %s", crashChildLife)
		}
	}
}

// crashReport is what one child reported.
type crashReport struct {
	ready                bool
	acked                [crashWriters]uint64 // batches acknowledged: 0..acked-1
	flushes, compactions uint64
	errLine              string
	lines                int
}

func (r *crashReport) Ready() bool    { return r.ready }
func (r *crashReport) Failed() string { return r.errLine }

func (r *crashReport) Parse(line string) error {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	switch f[0] {
	case "E":
		r.errLine = line
		return nil
	case "R":
		r.ready = true
		return nil
	}
	nums := make([]uint64, len(f)-1)
	for k := range nums {
		n, err := strconv.ParseUint(f[k+1], 10, 64)
		if err != nil {
			return fmt.Errorf("report line %q: %v", line, err)
		}
		nums[k] = n
	}
	if (f[0] != "A" && f[0] != "S") || len(nums) != 2 {
		return fmt.Errorf("report line %q: not one the child writes", line)
	}
	r.lines++
	switch f[0] {
	case "A":
		w, i := nums[0], nums[1]
		if w >= crashWriters {
			return fmt.Errorf("report line %q: no writer %d", line, w)
		}
		if i != r.acked[w] {
			return fmt.Errorf("writer %d: batch %d acknowledged after %d batches: out of order", w, i, r.acked[w])
		}
		r.acked[w]++
	case "S":
		r.flushes, r.compactions = nums[0], nums[1]
	}
	return nil
}

func TestCrashProcess(t *testing.T) {
	cycles := *kvCrashCycles
	if testing.Short() {
		cycles = min(cycles, 2)
	}
	for _, m := range crashModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			runCrashCycles(t, m.name, m.mode, cycles)
		})
	}
}

// crashState is one writer's keys: value by key, absent when deleted or never
// written.
type crashState map[string][]byte

func (s crashState) clone() crashState {
	c := make(crashState, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

func (s crashState) apply(ops []crashOp) {
	for _, op := range ops {
		if op.value == nil {
			delete(s, string(op.key))
		} else {
			s[string(op.key)] = op.value
		}
	}
}

func runCrashCycles(t *testing.T, modeName string, mode ioengine.IOMode, cycles int) {
	testengine.New(t, mode, ioengine.Options{}) // skips where io_uring is refused
	dir := testdir.Direct(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d, %d cycles", seed, cycles)

	// base[w] is writer w's state as the last reopen found it: what the
	// next child's batches apply to.
	var base [crashWriters]crashState
	for w := range base {
		base[w] = crashState{}
	}
	var totalAcks, inFlightFound, flushes, compactions uint64
	for cycle := uint64(1); cycle <= uint64(cycles); cycle++ {
		delay := time.Duration(150+rng.IntN(350)) * time.Millisecond
		r := runCrashChild(t, dir, modeName, cycle, delay)
		if !r.ready {
			t.Fatalf("cycle %d: the child never opened the store", cycle)
		}
		flushes += r.flushes
		compactions += r.compactions

		opts := crashOptions()
		opts.Engine = testengine.New(t, mode, ioengine.Options{})
		opts.Logf = t.Logf
		db, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("cycle %d (killed after %s): reopen: %v", cycle, delay, err)
		}
		got, err := crashReadAll(db)
		if err != nil {
			db.Close()
			t.Fatalf("cycle %d: reading the reopened store: %v", cycle, err)
		}
		for w := range crashWriters {
			a := r.acked[w]
			totalAcks += a
			want := base[w].clone()
			for i := uint64(0); i < a; i++ {
				want.apply(crashBatchOps(cycle, w, i))
			}
			next := want.clone()
			next.apply(crashBatchOps(cycle, w, a))
			switch {
			case crashStateEqual(got[w], want):
			case crashStateEqual(got[w], next):
				inFlightFound++
			default:
				db.Close()
				t.Fatalf("cycle %d (killed after %s, %d flushes, %d compactions): writer %d acknowledged batches 0..%d; the store holds neither the state after them nor after batch %d:\n%s",
					cycle, delay, r.flushes, r.compactions, w, int64(a)-1, a, crashDiff(got[w], want, next))
			}
			base[w] = got[w]
		}
		st := db.Stats()
		if err := db.Close(); err != nil {
			t.Fatalf("cycle %d: Close: %v", cycle, err)
		}
		t.Logf("cycle %d: killed after %s: %d report lines, acknowledged %v, %d flushes and %d compactions in the child; reopened with %d tables in L0, %d in L1, %d in L2",
			cycle, delay, r.lines, r.acked, r.flushes, r.compactions, st.Levels[0].Tables, st.Levels[1].Tables, st.Levels[2].Tables)
	}
	t.Logf("%d cycles: %d batches acknowledged and found, %d in-flight batches found whole, %d flushes, %d compactions",
		cycles, totalAcks, inFlightFound, flushes, compactions)
	if totalAcks == 0 {
		t.Fatalf("no batch was acknowledged in %d cycles", cycles)
	}
	if flushes == 0 {
		t.Errorf("no flush in %d cycles: the kills never reached the tables", cycles)
	}
}

// crashReadAll reads the whole store three ways (an iterator, MultiGet of
// every key, Get of every key), checks that they agree, and returns each
// writer's state.
func crashReadAll(db *DB) ([crashWriters]crashState, error) {
	var states [crashWriters]crashState
	for w := range states {
		states[w] = crashState{}
	}
	it := db.NewIterator(nil, nil)
	for it.Next() {
		var w, k int
		if n, err := fmt.Sscanf(string(it.Key()), "w%d/k%d", &w, &k); n != 2 || err != nil || w < 0 || w >= crashWriters || !bytes.Equal(it.Key(), crashKey(w, k)) {
			it.Close()
			return states, fmt.Errorf("iterator: key %q is not one this test writes", it.Key())
		}
		states[w][string(it.Key())] = bytes.Clone(it.Value())
	}
	if err := it.Close(); err != nil {
		return states, fmt.Errorf("iterator: %w", err)
	}
	var keys [][]byte
	for w := range crashWriters {
		for k := range crashKeysPerW {
			keys = append(keys, crashKey(w, k))
		}
	}
	vals, found, err := db.MultiGet(keys)
	if err != nil {
		return states, fmt.Errorf("MultiGet: %w", err)
	}
	for i, key := range keys {
		w := i / crashKeysPerW
		want, ok := states[w][string(key)]
		if found[i] != ok || !bytes.Equal(vals[i], want) {
			return states, fmt.Errorf("MultiGet %s: found=%v %s; the iterator: found=%v %s", key, found[i], crashValueID(vals[i]), ok, crashValueID(want))
		}
		v, err := db.Get(key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return states, fmt.Errorf("Get %s: %w", key, err)
		}
		if (err == nil) != ok || !bytes.Equal(v, want) {
			return states, fmt.Errorf("Get %s: %s (%v); the iterator: found=%v %s", key, crashValueID(v), err, ok, crashValueID(want))
		}
	}
	return states, nil
}

func crashStateEqual(a, b crashState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// crashDiff lists the keys where got differs from either expected state.
func crashDiff(got, acked, next crashState) string {
	keys := map[string]bool{}
	for _, s := range []crashState{got, acked, next} {
		for k := range s {
			keys[k] = true
		}
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for _, k := range sorted {
		g, a, n := got[k], acked[k], next[k]
		if bytes.Equal(g, a) && bytes.Equal(g, n) {
			continue
		}
		fmt.Fprintf(&b, "  %s: store %s; after the acknowledged batches %s; after one more %s\n", k, crashValueID(g), crashValueID(a), crashValueID(n))
	}
	return b.String()
}

// runCrashChild starts a child on dir, kills it with SIGKILL delay after it
// has opened the store, and returns what it reported.
func runCrashChild(t *testing.T, dir, modeName string, cycle uint64, delay time.Duration) *crashReport {
	t.Helper()
	r := &crashReport{}
	env := []string{kvCrashDirEnv + "=" + dir, kvCrashModeEnv + "=" + modeName, kvCrashCycleEnv + "=" + strconv.FormatUint(cycle, 10)}
	testchild.RunKilled(t, fmt.Sprintf("cycle %d", cycle), "^TestCrashProcessChild$", env, r, delay, crashChildLife)
	return r
}
