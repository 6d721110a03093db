package wal

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// The crash-state test: a workload runs against a real log with the trace
// on, recording every change the log makes to its files. From that record
// the test builds, for many seeds, a state a power loss could leave at a
// random moment — the flushed data, plus any subset of the writes not yet
// flushed, each torn at sector boundaries (512 B or 4 KiB), plus any prefix
// of the directory changes not yet flushed — writes it to a fresh
// directory, recovers it with Open and checks:
//
//   - Open succeeds: a power loss is never reported as corruption;
//   - every acknowledged entry that no completed truncation removed is
//     there, byte for byte;
//   - every entry there was written with that sequence number and payload
//     (nothing unacknowledged appears corrupted, nothing invented), and no
//     entry removed by a completed truncation comes back;
//   - the recovered log accepts appends and reopens cleanly.
//
// Model assumptions (also in the package doc): a file's size set by
// fallocate survives; sector writes may be lost or kept independently;
// directory changes become durable in the order they were made.

var crashSeeds = flag.Int("wal.crashseeds", 600, "crash states checked per workload by TestCrashStates")

// recorder collects trace events and the test's own acknowledgements in
// one order.
type recorder struct {
	mu  sync.Mutex
	evs []recEvent
}

type recKind uint8

const (
	recTrace      recKind = iota + 1
	recAppended           // Append returned seq with payload
	recTruncFront         // TruncateFront(seq) returned nil
	recTruncBack          // TruncateBack(seq) returned nil
	recTruncStart         // a truncation is about to be called: what it may remove is no longer required
)

type recEvent struct {
	kind    recKind
	tr      traceEvent
	seq     uint64
	payload string
}

func (r *recorder) add(e recEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

// runCrashWorkload appends from several goroutines with truncations in
// between and returns the record.
func runCrashWorkload(t *testing.T, seed uint64, depth int, mode ioengine.IOMode, zeroFill, recycle bool) []recEvent {
	rec := &recorder{}
	dir := t.TempDir()
	opts := Options{SegmentSize: 64 << 10, PipelineDepth: depth, IOMode: mode, Logf: t.Logf, zeroFillSegments: zeroFill, RecycleSegments: recycle,
		trace: func(ev traceEvent) { rec.add(recEvent{kind: recTrace, tr: ev}) }}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var counter sync.Mutex
	n := 0
	nextPayload := func(rng *rand.Rand, w int) []byte {
		counter.Lock()
		n++
		id := n
		counter.Unlock()
		p := []byte(fmt.Sprintf("w%d-%d-", w, id))
		fill := rng.IntN(1800)
		for i := 0; i < fill; i++ {
			p = append(p, byte('a'+(id+i)%26))
		}
		return p
	}
	phase := func(writers, each int) {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for range each {
					p := nextPayload(rng, w)
					if rng.IntN(8) == 0 {
						batch := [][]byte{p, nextPayload(rng, w)}
						if recycle {
							// Groups of several pages: a hole a crash
							// leaves past the first page of a recycled
							// segment is told by its stale table.
							for range rng.IntN(10) {
								batch = append(batch, nextPayload(rng, w))
							}
						}
						first, err := l.AppendBatch(batch)
						if err != nil {
							t.Error(err)
							return
						}
						for i, b := range batch {
							rec.add(recEvent{kind: recAppended, seq: first + uint64(i), payload: string(b)})
						}
						continue
					}
					seq, err := l.Append(p)
					if err != nil {
						t.Error(err)
						return
					}
					rec.add(recEvent{kind: recAppended, seq: seq, payload: string(p)})
				}
			}()
		}
		wg.Wait()
	}
	phase(8, 20)
	front := l.LastSeq() / 3
	rec.add(recEvent{kind: recTruncStart, seq: front, payload: "front"})
	if err := l.TruncateFront(front); err != nil {
		t.Fatal(err)
	}
	rec.add(recEvent{kind: recTruncFront, seq: front})
	// Front truncations beside the appends: their wal.meta writes and
	// removals run on the lifecycle's job goroutine while groups are written.
	truncated := make(chan struct{})
	go func() {
		defer close(truncated)
		for range 3 {
			time.Sleep(2 * time.Millisecond)
			first := l.FirstSeq()
			front := first + (l.LastSeq()-first)/3
			if front <= first {
				continue
			}
			rec.add(recEvent{kind: recTruncStart, seq: front, payload: "front"})
			if err := l.TruncateFront(front); err != nil {
				t.Error(err)
				return
			}
			rec.add(recEvent{kind: recTruncFront, seq: front})
		}
	}()
	phase(8, 15)
	<-truncated
	back := l.LastSeq() - 40
	rec.add(recEvent{kind: recTruncStart, seq: back, payload: "back"})
	if err := l.TruncateBack(back); err != nil {
		t.Fatal(err)
	}
	rec.add(recEvent{kind: recTruncBack, seq: back})
	phase(4, 15)
	if recycle {
		// Segments dropped, then made again from their files.
		for range 4 {
			first := l.FirstSeq()
			front := first + (l.LastSeq()-first)/2
			rec.add(recEvent{kind: recTruncStart, seq: front, payload: "front"})
			if err := l.TruncateFront(front); err != nil {
				t.Fatal(err)
			}
			rec.add(recEvent{kind: recTruncFront, seq: front})
			phase(4, 20)
		}
		if st := l.Stats(); st.Recycled < 2 {
			t.Fatalf("%d segments recycled, want 2 at least (%d rotations)", st.Recycled, st.Rotations)
		}
	}
	// Emptied past its last entry: the next append gets jump.
	jump := l.LastSeq() + 5
	rec.add(recEvent{kind: recTruncStart, seq: jump, payload: "front"})
	if err := l.TruncateFront(jump); err != nil {
		t.Fatal(err)
	}
	rec.add(recEvent{kind: recTruncFront, seq: jump})
	phase(4, 10)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen and cut again, so that recovery's own writes are in the record.
	l, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec.add(recEvent{kind: recTruncStart, seq: l.LastSeq() - 30, payload: "front"})
	if err := l.TruncateFront(l.LastSeq() - 30); err != nil {
		t.Fatal(err)
	}
	rec.add(recEvent{kind: recTruncFront, seq: l.FirstSeq()})
	phase(4, 10)
	l.Close()
	return rec.evs
}

// fileState is one inode of the simulated file system.
type fileState struct {
	durable []byte
	pending []traceEvent // writes not yet flushed, in order
}

type dirOp struct {
	op       traceOp
	from, to string
	inode    *fileState
}

// crashImage builds the directory a power loss after event cut could
// leave, choosing with rng.
func crashImage(evs []recEvent, cut int, rng *rand.Rand, sector int) map[string][]byte {
	durableNames := map[string]*fileState{}
	current := map[string]*fileState{}
	var pendingDir []dirOp
	apply := func(names map[string]*fileState, op dirOp) {
		switch op.op {
		case traceCreate:
			names[op.from] = op.inode
		case traceRename:
			if f, ok := names[op.from]; ok {
				delete(names, op.from)
				names[op.to] = f
			}
		case traceRemove:
			delete(names, op.from)
		}
	}
	for _, e := range evs[:cut] {
		if e.kind != recTrace {
			continue
		}
		ev := e.tr
		switch ev.op {
		case traceCreate:
			f := &fileState{durable: make([]byte, ev.size)}
			op := dirOp{op: traceCreate, from: ev.path, inode: f}
			apply(current, op)
			pendingDir = append(pendingDir, op)
		case traceWrite:
			f := current[ev.path]
			f.pending = append(f.pending, ev)
		case traceSync:
			f := current[ev.path]
			var keep []traceEvent
			for _, w := range f.pending {
				if ev.id == 0 || w.id == ev.id {
					writeAt(f, w.off, w.data)
				} else {
					keep = append(keep, w)
				}
			}
			f.pending = keep
		case traceRename, traceRemove:
			op := dirOp{op: ev.op, from: ev.path, to: ev.path2}
			apply(current, op)
			pendingDir = append(pendingDir, op)
		case traceSyncDir:
			for _, op := range pendingDir {
				apply(durableNames, op)
			}
			pendingDir = nil
		}
	}
	names := map[string]*fileState{}
	for k, v := range durableNames {
		names[k] = v
	}
	for _, op := range pendingDir[:rng.IntN(len(pendingDir)+1)] {
		apply(names, op)
	}
	out := map[string][]byte{}
	done := map[*fileState][]byte{}
	for name, f := range names {
		if img, ok := done[f]; ok {
			out[name] = img
			continue
		}
		img := &fileState{durable: bytes.Clone(f.durable)}
		for _, w := range f.pending {
			switch rng.IntN(3) {
			case 0: // lost
			case 1: // kept whole
				writeAt(img, w.off, w.data)
			case 2: // torn: each sector kept or lost
				for s := w.off / int64(sector) * int64(sector); s < w.off+int64(len(w.data)); s += int64(sector) {
					if rng.IntN(2) == 0 {
						continue
					}
					lo, hi := max(s, w.off), min(s+int64(sector), w.off+int64(len(w.data)))
					writeAt(img, lo, w.data[lo-w.off:hi-w.off])
				}
			}
		}
		done[f] = img.durable
		out[name] = img.durable
	}
	return out
}

func writeAt(f *fileState, off int64, data []byte) {
	if end := off + int64(len(data)); end > int64(len(f.durable)) {
		f.durable = append(f.durable, make([]byte, end-int64(len(f.durable)))...)
	}
	copy(f.durable[off:], data)
}

// written maps each (seq, payload) the log ever wrote to the index of the
// event that wrote it first.
func writtenEntries(evs []recEvent) map[uint64]map[string]int {
	w := map[uint64]map[string]int{}
	for i, e := range evs {
		if e.kind != recTrace || e.tr.op != traceWrite || !strings.Contains(e.tr.path, segmentSuffix) || e.tr.off == 0 {
			continue
		}
		b := e.tr.data
		for len(b) >= EntryHeaderSize {
			seq, p, n, err := format.DecodeEntry(b, len(b))
			if err != nil {
				break // a trailer
			}
			if w[seq] == nil {
				w[seq] = map[string]int{}
			}
			if _, ok := w[seq][string(p)]; !ok {
				w[seq][string(p)] = i
			}
			b = b[n:]
		}
	}
	return w
}

func TestCrashStates(t *testing.T) {
	cases := []struct {
		name  string
		depth int
		mode  ioengine.IOMode
		zero  bool
		reuse bool
	}{
		{"depth=2/uring", 2, ioengine.URing, false, false},
		{"depth=1/uring/zerofill", 1, ioengine.URing, true, false},
		{"depth=2/syscall", 2, ioengine.Syscall, false, false},
		{"depth=1/uring/recycle", 1, ioengine.URing, false, true},
		{"depth=1/syscall/recycle", 1, ioengine.Syscall, false, true},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := runCrashWorkload(t, uint64(ci), c.depth, c.mode, c.zero, c.reuse)
			written := writtenEntries(evs)
			seeds := *crashSeeds
			if testing.Short() {
				seeds /= 10
			}
			checked := map[string]int{}
			root := crashRoot(t)
			eng, err := ioengine.New(ioengine.Options{Mode: c.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(ci)))
				cut := rng.IntN(len(evs) + 1)
				sector := 512
				if seed%2 == 1 {
					sector = 4096
				}
				outcome, err := checkCrashState(t, eng, root, evs, cut, rng, sector, written)
				if err != nil {
					t.Fatalf("seed %d (crash after event %d of %d, %d-byte sectors): %v", seed, cut, len(evs), sector, err)
				}
				checked[outcome]++
			}
			t.Logf("%d events, %d crash states: %v", len(evs), seeds, checked)
		})
	}
}

// checkCrashState recovers one crash state and checks it.
func checkCrashState(t *testing.T, eng *ioengine.Engine, root string, evs []recEvent, cut int, rng *rand.Rand, sector int, written map[uint64]map[string]int) (string, error) {
	img := crashImage(evs, cut, rng, sector)
	dir, err := os.MkdirTemp(root, "crash")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for name, b := range img {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	// What the callers were told, up to the crash.
	acked := map[uint64]string{}
	truncFront, truncBack := map[uint64]int{}, map[uint64]int{}
	for i, e := range evs[:cut] {
		switch e.kind {
		case recAppended:
			acked[e.seq] = e.payload
		case recTruncStart:
			for s := range acked {
				if (e.payload == "front" && s < e.seq) || (e.payload == "back" && s > e.seq) {
					delete(acked, s)
				}
			}
		case recTruncFront:
			for s := range acked {
				if s < e.seq {
					delete(acked, s)
				}
			}
			truncFront[e.seq] = i
		case recTruncBack:
			for s := range acked {
				if s > e.seq {
					delete(acked, s)
				}
			}
			truncBack[e.seq] = i
		}
	}
	var logs []string
	// The checks need no flushes of their own: NoSync keeps thousands of
	// recoveries fast.
	opts := Options{SegmentSize: 64 << 10, Engine: eng, Unsafe: UnsafeOptions{NoSync: true}}
	opts.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	l, err := Open(dir, opts)
	if err != nil {
		return "", fmt.Errorf("Open: %w", err)
	}
	defer l.Close()
	first, last := l.FirstSeq(), l.LastSeq()
	seqs := make([]uint64, 0, len(acked))
	for s := range acked {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for _, s := range seqs {
		got, err := l.ReadAt(s)
		if err != nil {
			return "", fmt.Errorf("acknowledged seq %d (log holds %d..%d): %w", s, first, last, err)
		}
		if string(got) != acked[s] {
			return "", fmt.Errorf("acknowledged seq %d: payload %.20q, want %.20q", s, got, acked[s])
		}
	}
	for s := first; s <= last; s++ {
		got, err := l.ReadAt(s)
		if err != nil {
			return "", fmt.Errorf("seq %d of %d..%d: %w", s, first, last, err)
		}
		at, ok := written[s][string(got)]
		if !ok || at >= cut {
			return "", fmt.Errorf("seq %d holds a payload (%.20q) never written with that seq before the crash", s, got)
		}
		for x, done := range truncFront {
			if s < x && done < cut {
				return "", fmt.Errorf("seq %d is back after TruncateFront(%d) returned", s, x)
			}
		}
		for x, done := range truncBack {
			if s > x && at < done {
				return "", fmt.Errorf("seq %d (written at event %d) is back after TruncateBack(%d) returned at event %d", s, at, x, done)
			}
		}
	}
	// Append again what was written (and perhaps torn) as the next entry
	// before the crash: the new entry then ends exactly where the old one
	// did, so a torn tail left in place would be read as the entries after
	// it on the next open.
	again := []byte("after the crash")
	best := -1
	for p, at := range written[last+1] {
		if at < cut && at > best {
			again, best = []byte(p), at
		}
	}
	next, err := l.Append(again)
	if err != nil || next != last+1 {
		return "", fmt.Errorf("append after recovery: seq %d, %v (last %d)", next, err, last)
	}
	if err := l.Close(); err != nil {
		return "", err
	}
	if _, err := Verify(dir); err != nil {
		return "", fmt.Errorf("Verify after recovery: %w", err)
	}
	opts.Logf = t.Logf
	l2, err := Open(dir, opts)
	if err != nil {
		return "", fmt.Errorf("second Open: %w", err)
	}
	if l2.LastSeq() != last+1 {
		err = fmt.Errorf("second Open: last seq %d, want %d", l2.LastSeq(), last+1)
	}
	l2.Close()
	if err != nil {
		return "", err
	}
	switch {
	case len(logs) > 0:
		return "tail cut", nil
	case len(acked) == 0:
		return "nothing acknowledged", nil
	default:
		return "clean", nil
	}
}

// crashRoot is where crash states are written: memory (/dev/shm) when the
// machine has it, since thousands of small directories are made and removed
// and nothing there needs to reach a disk.
func crashRoot(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "ringstore-wal-crash-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}
