package wal

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/wal/internal/format"
)

// recycledLog fills a log with RecycleSegments until its last segment is a
// recycled file holding entries (after enough reuse that files are in
// their third use and more), keeping the newest entries only, and closes
// it. It returns the options, the payloads of the entries kept and
// the log's Stats before Close.
func recycledLog(t *testing.T, dir string) (Options, map[uint64][]byte, Stats) {
	t.Helper()
	opts := Options{SegmentSize: 64 << 10, RecycleSegments: true, Logf: t.Logf}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[uint64][]byte{}
	// Random payloads: a sector of a damaged entry that holds what the
	// file held there before reads as unwritten, as a zero sector does in
	// a fresh segment, and would make the damage a torn tail.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; ; i++ {
		n := 200 + i%900
		if i%13 == 0 {
			// Now and then an entry that leaves a segment pages short of
			// full: those pages keep the file's earlier bytes into its next
			// use, which its next stale table must carry over.
			n = 7000
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		seq, err := l.Append(p)
		if err != nil {
			t.Fatal(err)
		}
		kept[seq] = p
		if i%40 == 39 {
			front := l.LastSeq() - 20
			if err := l.TruncateFront(front); err != nil {
				t.Fatal(err)
			}
			for s := range kept {
				if s < front {
					delete(kept, s)
				}
			}
		}
		st := l.Stats()
		if st.Recycled >= 8 && l.active != nil && l.active.stale != nil && l.activeOff > 20000 && i%40 != 39 {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			return opts, kept, st
		}
		if i > 5000 {
			t.Fatalf("no recycled active segment after %d appends: %+v", i, st)
		}
	}
}

// recycledTail makes a log with recycledLog and opens its last segment, a
// reused file, as recovery reads it.
func recycledTail(t *testing.T) (dir string, kept map[uint64][]byte, sf *SegmentFile) {
	t.Helper()
	dir = t.TempDir()
	_, kept, _ = recycledLog(t, dir)
	sf, err := OpenSegment(lastSegment(t, dir), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	return dir, kept, sf
}

func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs := segPaths(t, dir)
	if len(segs) == 0 {
		t.Fatal("no segments")
	}
	return segs[len(segs)-1]
}

func checkEntries(t *testing.T, l *Log, kept map[uint64][]byte) {
	t.Helper()
	for seq, want := range kept {
		got, err := l.ReadAt(seq)
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", seq, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("ReadAt(%d) = %.20q, want %.20q", seq, got, want)
		}
	}
}

func TestRecycleSegments(t *testing.T) {
	dir := t.TempDir()
	opts, kept, st := recycledLog(t, dir)
	if st.Recycled < 3 || st.Rotations <= st.Recycled {
		t.Fatalf("stats %+v", st)
	}
	sf, err := OpenSegment(lastSegment(t, dir), true)
	if err != nil {
		t.Fatal(err)
	}
	info := sf.Info
	sf.Close()
	if !info.Reusable || info.Sealed || info.TornTail != 0 {
		t.Fatalf("last segment %+v: want recycled, unsealed, no torn tail", info)
	}
	// What lies past the entries is the file's earlier use, not zeros.
	img, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	if format.AllZero(img[(info.DataEnd+pageSize-1)/pageSize*pageSize : format.StaleTableOffset(info.Size)]) {
		t.Fatal("the recycled segment holds only zeros past its entries: nothing was reused")
	}
	// A read-only open reads it as a writer does, cutting nothing.
	ro, err := Open(dir, Options{ReadOnly: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if cuts := ro.Recovery().Cuts; len(cuts) != 0 || ro.LastSeq() != info.LastSeq {
		t.Fatalf("read-only open: cuts %v, last seq %d, want none and %d", cuts, ro.LastSeq(), info.LastSeq)
	}
	checkEntries(t, ro, kept)
	ro.Close()
	for _, recycle := range []bool{true, false} {
		o := opts
		o.RecycleSegments = recycle
		l, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if cuts := l.Recovery().Cuts; len(cuts) != 0 {
			t.Fatalf("a clean recycled segment was cut: %v", cuts)
		}
		checkEntries(t, l, kept)
		// Appends go on in the recycled segment, within its entries' limit,
		// whether or not this Log recycles.
		for i := range 60 {
			p := bytes.Repeat([]byte{byte('a' + i%26)}, 1500)
			seq, err := l.Append(p)
			if err != nil {
				t.Fatal(err)
			}
			kept[seq] = p
		}
		checkEntries(t, l, kept)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(dir); err != nil {
			t.Fatalf("Verify (recycle %v): %v", recycle, err)
		}
	}
	// Nothing left behind: no recycle or spare files after Close.
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*"+tmpSuffix)); len(tmp) != 0 {
		t.Fatalf("left behind: %v", tmp)
	}
}

// Damage to an acknowledged entry of a recycled segment with valid entries
// after it is still an error, not a torn tail: the stale bytes past the
// entries do not explain it.
func TestRecycledDamage(t *testing.T) {
	dir, kept, sf := recycledTail(t)
	victim := sf.Info.LastSeq - 3
	_, off, err := sf.Entry(victim)
	if err != nil {
		t.Fatal(err)
	}
	sf.Close()
	flipByte(t, sf.Info.Path, off+EntryHeaderSize+5)
	_, err = Open(dir, Options{SegmentSize: 64 << 10, RecycleSegments: true, Logf: t.Logf})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != off || ce.FirstLost != victim {
		t.Fatalf("Open: %v; want damage at offset %d, entry %d", err, off, victim)
	}
	rep, err := Repair(dir, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LostFrom != victim {
		t.Fatalf("Repair lost from %d, want %d: %+v", rep.LostFrom, victim, rep)
	}
	l, err := Open(dir, Options{SegmentSize: 64 << 10, RecycleSegments: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for s := range kept {
		if s >= victim {
			delete(kept, s)
		}
	}
	checkEntries(t, l, kept)
}

// A damaged stale table leaves recovery unable to tell the stale bytes
// from torn ones: an error at the table, which Repair resolves by sealing
// the segment after its last entry.
func TestRecycledStaleTableDamage(t *testing.T) {
	dir := t.TempDir()
	_, kept, _ := recycledLog(t, dir)
	path := lastSegment(t, dir)
	flipByte(t, path, format.StaleTableOffset(64<<10)+100)
	_, err := Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != format.StaleTableOffset(64<<10) || !strings.Contains(err.Error(), "stale table") {
		t.Fatalf("Open: %v; want damage at the stale table", err)
	}
	if _, err := Repair(dir, Options{Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	checkEntries(t, l, kept)
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// A segment TruncateBack sealed short keeps entries past its end whose
// seqs will be given again: its file is never reused (a stale entry with
// a current seq could be read as written).
func TestRecycleNeverReusesCutSegment(t *testing.T) {
	var mu sync.Mutex
	var reused []string
	opts := Options{SegmentSize: 64 << 10, RecycleSegments: true, Logf: t.Logf, trace: func(ev traceEvent) {
		if ev.op == traceRename && strings.HasPrefix(ev.path2, recyclePrefix) {
			mu.Lock()
			reused = append(reused, ev.path)
			mu.Unlock()
		}
	}}
	l, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := bytes.Repeat([]byte("x"), 1000)
	for l.Stats().Rotations < 3 {
		if _, err := l.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	l.segMu.RLock()
	full, cut := l.segs[0], l.segs[1] // both sealed full; the third is active
	l.segMu.RUnlock()
	// Their next stale tables are written after their seals, in the
	// background: only then may a file be reused.
	reusable := func(s *segment) bool {
		l.files.mu.Lock()
		defer l.files.mu.Unlock()
		return s.state == segReusable
	}
	for deadline := time.Now().Add(10 * time.Second); !reusable(full) || !reusable(cut); {
		if time.Now().After(deadline) {
			t.Fatal("the sealed segments' next stale tables were not written in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.TruncateBack(cut.base + 5); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFront(cut.base + 6); err != nil { // drops both: the log is empty
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reused) != 1 || reused[0] != filepath.Base(full.path) {
		t.Fatalf("kept for reuse: %v; want only %s (not %s, cut by TruncateBack)", reused, filepath.Base(full.path), filepath.Base(cut.path))
	}
}

// In a reused segment the earlier bytes past the entries are expected, but
// bytes the stale table does not match, more than could have been in
// flight past the last entry, are damage, as non-zero bytes are in a fresh
// segment; within the window they are a torn tail.
func TestRecycledChangedPastTheWindow(t *testing.T) {
	dir, kept, sf := recycledTail(t)
	path, end, last := sf.Info.Path, sf.Info.DataEnd, sf.Info.LastSeq
	sf.Close()
	// Recovery's window for groups of 4 KiB at most: 2 × 8 KiB (the
	// largest entry) + 2 sectors.
	opts := Options{SegmentSize: 64 << 10, MaxGroupBytes: 4096, MaxEntrySize: 7100, Logf: t.Logf}
	window := inFlightWindow(opts)
	if end+window+2*sectorSize > format.StaleTableOffset(64<<10) {
		t.Skipf("entries end at %d: no room past the window", end)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	far := bytes.Clone(orig)
	s := (end + window + sectorSize) / sectorSize * sectorSize
	far[s+100] ^= 0x5a
	if err := os.WriteFile(path, far, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, opts)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != end || ce.FirstLost != last+1 {
		t.Fatalf("Open with a changed sector at %d, %d past the entries: %v; want damage at %d", s, s-end, err, end)
	}
	near := bytes.Clone(orig)
	s = (end + pageSize) / pageSize * pageSize
	near[s+100] ^= 0x5a
	if err := os.WriteFile(path, near, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open with a changed sector within the window: %v", err)
	}
	defer l.Close()
	if cuts := l.Recovery().Cuts; len(cuts) != 1 || cuts[0].Offset != end || l.LastSeq() != last {
		t.Fatalf("cuts %v, last seq %d; want one cut at %d after seq %d", cuts, l.LastSeq(), end, last)
	}
	checkEntries(t, l, kept)
}
