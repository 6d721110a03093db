package wal_test

// TestCrashProcess kills a process that is appending to a log, with SIGKILL
// at a random moment, and checks the log it left: every append the process
// saw acknowledged is there with its payload, the entries are contiguous,
// and Verify finds no damage. The same directory goes through several kill
// cycles, each child appending to the log the one before left. The child is
// this test binary itself, running TestCrashProcessChild with
// crashDirEnv set; it reports every acknowledged append on stdout, one line
// each, written only after Append returned nil.
//
// A process crash keeps the page cache, so this checks the log's own
// ordering (acknowledge only what is written, in order; cut the tail a
// killed group left; TruncateFront part way), not power loss, which
// TestCrashStates covers. Long runs: go test -run TestCrashProcess
// -wal.crashcycles=500 ./wal/

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal"
)

var crashCycles = flag.Int("wal.crashcycles", 4, "kill cycles per I/O mode in TestCrashProcess")

// The child's instructions, in its environment.
const (
	crashDirEnv   = "RINGSTORE_WAL_CRASH_DIR"   // the log's directory; set only in the child
	crashModeEnv  = "RINGSTORE_WAL_CRASH_MODE"  // "uring" or "syscall", "+recycle" for RecycleSegments
	crashCycleEnv = "RINGSTORE_WAL_CRASH_CYCLE" // the cycle number, part of every payload

	crashSegmentSize = 256 << 10
	crashWriters     = 16
	crashBatchWriter = 0   // this writer appends batches of crashBatch entries
	crashBatch       = 3   // entries per AppendBatch
	crashKeep        = 300 // the child truncates the front when the log holds more than this
	crashChildLife   = 30 * time.Second
)

// The child's report lines:
//
//	R first last        opened; the log held first..last
//	A seq writer i      Append of writer's i-th payload returned seq
//	T seq               TruncateFront(seq) is about to be called
//	t seq               TruncateFront(seq) returned nil
//
// A child that fails writes "E message" and exits 3.

// TestCrashProcessChild is the child of TestCrashProcess; it runs only in a
// child process and never returns there.
func TestCrashProcessChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child of TestCrashProcess: runs only in a child process")
	}
	os.Exit(crashChild(dir))
}

func crashChild(dir string) int {
	rep := &testchild.Reporter{}
	fail := rep.Fail
	mode := ioengine.URing
	modeName, recycle := strings.CutSuffix(os.Getenv(crashModeEnv), "+recycle")
	if modeName == "syscall" {
		mode = ioengine.Syscall
	}
	cycle, err := strconv.ParseUint(os.Getenv(crashCycleEnv), 10, 64)
	if err != nil {
		return fail("%s: %v", crashCycleEnv, err)
	}
	eng, err := ioengine.New(ioengine.Options{Mode: mode})
	if err != nil {
		return fail("ioengine.New: %v", err)
	}
	l, err := wal.Open(dir, wal.Options{SegmentSize: crashSegmentSize, Engine: eng, RecycleSegments: recycle,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }})
	if err != nil {
		return fail("Open: %v", err)
	}
	rep.Line("R %d %d", l.FirstSeq(), l.LastSeq())

	errc := make(chan error, crashWriters+1)
	for w := range uint64(crashWriters) {
		go func() {
			for i := uint64(0); ; {
				if w == crashBatchWriter {
					batch := make([][]byte, crashBatch)
					for k := range batch {
						batch[k] = idPayload(cycle, w, i+uint64(k))
					}
					seq, err := l.AppendBatch(batch)
					if err != nil {
						errc <- fmt.Errorf("AppendBatch of writer %d: %w", w, err)
						return
					}
					for k := range batch {
						rep.Line("A %d %d %d", seq+uint64(k), w, i+uint64(k))
					}
					i += crashBatch
					continue
				}
				seq, err := l.Append(idPayload(cycle, w, i))
				if err != nil {
					errc <- fmt.Errorf("Append of writer %d: %w", w, err)
					return
				}
				rep.Line("A %d %d %d", seq, w, i)
				i++
			}
		}()
	}
	go func() {
		for {
			time.Sleep(5 * time.Millisecond)
			if first, last := l.FirstSeq(), l.LastSeq(); last >= first+crashKeep {
				to := last - crashKeep/2
				rep.Line("T %d", to)
				if err := l.TruncateFront(to); err != nil {
					errc <- fmt.Errorf("TruncateFront(%d): %w", to, err)
					return
				}
				rep.Line("t %d %d", to, l.Stats().Recycled)
			}
		}
	}()
	select {
	case err := <-errc:
		return fail("%v", err)
	case <-time.After(crashChildLife):
		return fail("not killed within %s", crashChildLife)
	}
}

type crashID struct{ cycle, w, i uint64 }

// crashReport is what one child reported.
type crashReport struct {
	ready       bool
	first, last uint64 // from the R line
	acks        map[uint64]crashID
	truncStart  uint64 // the highest T
	truncDone   uint64 // the highest t
	recycled    uint64 // segments made from reused files, as the last t said
	errLine     string
	lines       int
}

func (r *crashReport) Ready() bool    { return r.ready }
func (r *crashReport) Failed() string { return r.errLine }

func (r *crashReport) Parse(line string) error {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	if f[0] == "E" {
		r.errLine = line
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
	want := map[string]int{"R": 2, "A": 3, "T": 1, "t": 2}[f[0]]
	if want == 0 || len(nums) != want {
		return fmt.Errorf("report line %q: not one the child writes", line)
	}
	r.lines++
	switch f[0] {
	case "R":
		r.ready, r.first, r.last = true, nums[0], nums[1]
	case "A":
		if prev, dup := r.acks[nums[0]]; dup {
			return fmt.Errorf("seq %d acknowledged twice: to writer %d (entry %d) and writer %d (entry %d)", nums[0], prev.w, prev.i, nums[1], nums[2])
		}
		r.acks[nums[0]] = crashID{w: nums[1], i: nums[2]}
	case "T":
		r.truncStart = max(r.truncStart, nums[0])
	case "t":
		r.truncDone, r.recycled = max(r.truncDone, nums[0]), max(r.recycled, nums[1])
	}
	return nil
}

func TestCrashProcess(t *testing.T) {
	cycles := *crashCycles
	if testing.Short() {
		cycles = min(cycles, 2)
	}
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			runCrashCycles(t, m.name, m.mode, cycles)
		})
	}
	// Killed while segments' files are reused: truncated, renamed, their
	// tables written and read back, made into new segments.
	t.Run("uring+recycle", func(t *testing.T) {
		t.Parallel()
		runCrashCycles(t, "uring+recycle", ioengine.URing, cycles)
	})
}

func runCrashCycles(t *testing.T, modeName string, mode ioengine.IOMode, cycles int) {
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d, %d cycles", seed, cycles)

	// expect holds the entries that must stay: every acknowledged append,
	// and every entry a reopen found (a process crash keeps the page
	// cache, so what one reopen reads, the next must read too), unless a
	// TruncateFront may have removed it.
	expect := map[uint64]crashID{}
	var truncStart, truncDone uint64 // over all cycles
	first, last := uint64(1), uint64(0)
	var totalAcks, cutTails int
	var recycled uint64
	// A "+recycle" run goes on past its cycles, up to 4× as many, until a
	// segment has been made from a reused file: a child on a loaded
	// machine may be killed before its log has cut any segment to reuse.
	maxCycles := uint64(cycles)
	if strings.HasSuffix(modeName, "+recycle") {
		maxCycles *= 4
	}
	for cycle := uint64(1); cycle <= maxCycles; cycle++ {
		if cycle > uint64(cycles) && recycled > 0 {
			break
		}
		delay := time.Duration(50+rng.IntN(350)) * time.Millisecond
		r := runCrashChild(t, dir, modeName, cycle, delay)
		if !r.ready {
			t.Fatalf("cycle %d: the child never opened the log", cycle)
		}
		if r.first != first || r.last != last {
			t.Fatalf("cycle %d: the child opened the log as %d..%d, the parent left %d..%d", cycle, r.first, r.last, first, last)
		}
		totalAcks += len(r.acks)
		recycled += r.recycled
		for seq, id := range r.acks {
			id.cycle = cycle
			if prev, ok := expect[seq]; ok {
				t.Fatalf("cycle %d: seq %d acknowledged to writer %d (entry %d), but the log already held it as cycle %d's writer %d entry %d",
					cycle, seq, id.w, id.i, prev.cycle, prev.w, prev.i)
			}
			if seq <= last {
				t.Fatalf("cycle %d: seq %d acknowledged, but the log the child opened ended at %d", cycle, seq, last)
			}
			expect[seq] = id
		}
		truncStart, truncDone = max(truncStart, r.truncStart), max(truncDone, r.truncDone)

		l, err := wal.Open(dir, wal.Options{SegmentSize: crashSegmentSize, IOMode: mode, Logf: t.Logf})
		if err != nil {
			t.Fatalf("cycle %d: reopen after the kill: %v", cycle, err)
		}
		first, last = l.FirstSeq(), l.LastSeq()
		st := l.Stats()
		cutTails += int(st.TailCuts)
		// The front moved only as far as a TruncateFront asked, and at
		// least as far as a finished one.
		if first < truncDone {
			l.Close()
			t.Fatalf("cycle %d: the log starts at %d, but TruncateFront(%d) had returned", cycle, first, truncDone)
		}
		if first > max(truncStart, 1) {
			l.Close()
			t.Fatalf("cycle %d: the log starts at %d, but no TruncateFront past %d was called", cycle, first, truncStart)
		}
		err = checkCrashLog(l, cycle, expect, first, last)
		if cerr := l.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("Close: %w", cerr)
		}
		if err != nil {
			t.Fatalf("cycle %d (killed after %s, %d acknowledged, log %d..%d): %v", cycle, delay, len(r.acks), first, last, err)
		}
		rep, err := wal.Verify(dir)
		if err != nil {
			t.Fatalf("cycle %d: Verify after the reopen: %v", cycle, err)
		}
		if rep.FirstSeq != first || rep.LastSeq != last {
			t.Fatalf("cycle %d: Verify says %d..%d, the reopened log held %d..%d", cycle, rep.FirstSeq, rep.LastSeq, first, last)
		}
		for _, s := range rep.Segments {
			if s.TornTail != 0 {
				t.Fatalf("cycle %d: Verify finds a torn tail of %d bytes in %s after a reopen cut it", cycle, s.TornTail, s.Path)
			}
		}
		t.Logf("cycle %d: killed after %s: %d report lines, %d appends acknowledged, truncations to %d started, %d done; reopened %d..%d in %d segments, %d tail cut",
			cycle, delay, r.lines, len(r.acks), r.truncStart, r.truncDone, first, last, len(rep.Segments), st.TailCuts)
	}
	t.Logf("%d cycles: %d appends acknowledged and found, %d torn tails cut, %d segments made from reused files, log %d..%d", cycles, totalAcks, cutTails, recycled, first, last)
	if totalAcks == 0 {
		t.Fatalf("no append was acknowledged in %d cycles", cycles)
	}
	if strings.HasSuffix(modeName, "+recycle") && recycled == 0 {
		t.Fatalf("no segment was made from a reused file in %d cycles", maxCycles)
	}
}

// checkCrashLog checks the reopened log against expect, then adds to expect
// every entry it holds and drops what lies before first.
func checkCrashLog(l *wal.Log, cycle uint64, expect map[uint64]crashID, first, last uint64) error {
	for seq, id := range expect {
		if seq < first {
			continue // checked by the caller: first is within a TruncateFront's reach
		}
		if seq > last {
			return fmt.Errorf("seq %d (cycle %d, writer %d, entry %d) was acknowledged or read before, but the log ends at %d", seq, id.cycle, id.w, id.i, last)
		}
		p, err := l.ReadAt(seq)
		if err != nil {
			return fmt.Errorf("ReadAt(%d): %w", seq, err)
		}
		if !equalBytes(p, idPayload(id.cycle, id.w, id.i)) {
			c, w, i, derr := payloadID(p)
			return fmt.Errorf("seq %d: want cycle %d writer %d entry %d, the log holds cycle %d writer %d entry %d (%v)", seq, id.cycle, id.w, id.i, c, w, i, derr)
		}
	}
	// Contiguous, every payload whole and appended once.
	seen := map[crashID]uint64{}
	it := l.Iterator(first)
	next := first
	for it.Next() {
		if it.Seq() != next {
			return fmt.Errorf("iterator: seq %d where %d was expected", it.Seq(), next)
		}
		c, w, i, err := payloadID(it.Payload())
		if err != nil {
			return fmt.Errorf("entry %d: %w", it.Seq(), err)
		}
		if c > cycle {
			return fmt.Errorf("entry %d is from cycle %d, after this one (%d)", it.Seq(), c, cycle)
		}
		id := crashID{c, w, i}
		if prev, dup := seen[id]; dup {
			return fmt.Errorf("entries %d and %d both hold cycle %d writer %d entry %d", prev, it.Seq(), c, w, i)
		}
		seen[id] = it.Seq()
		expect[it.Seq()] = id
		next++
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("iterator: %w", err)
	}
	if next != last+1 {
		return fmt.Errorf("iterated %d..%d, LastSeq is %d", first, next-1, last)
	}
	for seq := range expect {
		if seq < first {
			delete(expect, seq)
		}
	}
	return nil
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

// runCrashChild starts a child on dir, kills it with SIGKILL delay after it
// has opened the log, and returns what it reported.
func runCrashChild(t *testing.T, dir, modeName string, cycle uint64, delay time.Duration) *crashReport {
	t.Helper()
	r := &crashReport{acks: map[uint64]crashID{}}
	env := []string{crashDirEnv + "=" + dir, crashModeEnv + "=" + modeName, crashCycleEnv + "=" + strconv.FormatUint(cycle, 10)}
	testchild.RunKilled(t, fmt.Sprintf("cycle %d", cycle), "^TestCrashProcessChild$", env, r, delay, crashChildLife)
	return r
}
