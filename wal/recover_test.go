package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// buildLog writes n entries (payloadFor) in 64 KiB segments and closes the
// log. It returns the segment paths in order.
func buildLog(t *testing.T, dir string, n uint64) []string {
	t.Helper()
	l := openTest(t, dir, Options{})
	for seq := uint64(1); seq <= n; seq++ {
		if _, err := l.Append(payloadFor(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return segPaths(t, dir)
}

func modifyFile(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entryOffset returns the offset of entry seq in the segment at path.
func entryOffset(t *testing.T, path string, seq uint64) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := format.DecodeSegmentHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	r := scanEntries(b, h.BaseSeq, int64(len(b))-TrailerSize)
	if seq < h.BaseSeq || seq > r.last {
		t.Fatalf("seq %d not in %s (%d..%d)", seq, path, h.BaseSeq, r.last)
	}
	return int64(r.index[seq-h.BaseSeq])
}

func TestRecoveryDamage(t *testing.T) {
	const n = 300
	type result struct {
		openErr   error  // wanted errors.Is of Open's error; nil: Open succeeds
		file      string // the file the error must name ("" for the segment damaged)
		offset    int64  // the offset the *CorruptError must carry (-1: any)
		lastAfter uint64 // LastSeq after Open (or after Repair when openErr != nil)
	}
	cases := []struct {
		name    string
		corrupt func(t *testing.T, dir string, segs []string) (damaged string, want result)
	}{
		{"bit flip in a sealed entry", func(t *testing.T, dir string, segs []string) (string, result) {
			base := mustBase(segs[1])
			off := entryOffset(t, segs[1], base+3)
			modifyFile(t, segs[1], func(b []byte) []byte { b[off+EntryHeaderSize+1] ^= 0x10; return b })
			return segs[1], result{openErr: ErrCorrupt, offset: off, lastAfter: base + 2}
		}},
		{"bit flip in a sealed entry header", func(t *testing.T, dir string, segs []string) (string, result) {
			base := mustBase(segs[0])
			off := entryOffset(t, segs[0], base+10)
			modifyFile(t, segs[0], func(b []byte) []byte { b[off+5] ^= 1; return b })
			return segs[0], result{openErr: ErrCorrupt, offset: off, lastAfter: base + 9}
		}},
		{"sealed entries zeroed before the seal's end", func(t *testing.T, dir string, segs []string) (string, result) {
			base := mustBase(segs[1])
			off := entryOffset(t, segs[1], base+3)
			modifyFile(t, segs[1], func(b []byte) []byte { clear(b[off : off+EntryHeaderSize]); return b })
			return segs[1], result{openErr: ErrCorrupt, offset: off, lastAfter: base + 2}
		}},
		{"bit flip in a trailer", func(t *testing.T, dir string, segs []string) (string, result) {
			modifyFile(t, segs[1], func(b []byte) []byte { b[len(b)-TrailerSize+9] ^= 1; return b })
			// Repair reseals the segment from its entries: nothing is lost
			// but the later segments, which no longer follow... they do
			// follow, so nothing at all is lost.
			return segs[1], result{openErr: ErrCorrupt, offset: 64<<10 - TrailerSize, lastAfter: n}
		}},
		{"trailer lost on a segment that is not the last", func(t *testing.T, dir string, segs []string) (string, result) {
			modifyFile(t, segs[0], func(b []byte) []byte { clear(b[len(b)-TrailerSize:]); return b })
			return segs[0], result{openErr: ErrCorrupt, offset: 64<<10 - TrailerSize, lastAfter: n}
		}},
		{"bit flip in a segment header", func(t *testing.T, dir string, segs []string) (string, result) {
			modifyFile(t, segs[2], func(b []byte) []byte { b[20] ^= 1; return b })
			return segs[2], result{openErr: ErrCorrupt, offset: 0, lastAfter: mustBase(segs[2]) - 1}
		}},
		{"sealed segment truncated", func(t *testing.T, dir string, segs []string) (string, result) {
			modifyFile(t, segs[1], func(b []byte) []byte { return b[:len(b)-5000] })
			return segs[1], result{openErr: ErrTruncated, offset: -1, lastAfter: mustBase(segs[1]) - 1}
		}},
		{"segment missing in the middle", func(t *testing.T, dir string, segs []string) (string, result) {
			if err := os.Remove(segs[1]); err != nil {
				t.Fatal(err)
			}
			return segs[2], result{openErr: ErrCorrupt, offset: 16, lastAfter: mustBase(segs[1]) - 1}
		}},
		{"meta file damaged", func(t *testing.T, dir string, segs []string) (string, result) {
			path := filepath.Join(dir, format.MetaName)
			b := format.EncodeMeta(1)
			b[9] ^= 1
			os.WriteFile(path, b, 0o644)
			return path, result{openErr: ErrCorrupt, offset: 0, lastAfter: n}
		}},
		{"torn tail after the last entry", func(t *testing.T, dir string, segs []string) (string, result) {
			last := segs[len(segs)-1]
			off := entryOffset(t, last, n) + int64(EncodedLen(len(payloadFor(n))))
			modifyFile(t, last, func(b []byte) []byte {
				copy(b[off:], format.AppendEntry(nil, n+1, []byte("never acknowledged"))[:20])
				return b
			})
			return last, result{lastAfter: n}
		}},
		{"bit flip in the last entry of the active segment after a clean close", func(t *testing.T, dir string, segs []string) (string, result) {
			last := segs[len(segs)-1]
			off := entryOffset(t, last, n)
			modifyFile(t, last, func(b []byte) []byte { b[off+EntryHeaderSize] ^= 0xff; return b })
			return last, result{openErr: ErrCorrupt, offset: off, lastAfter: n - 1} // the clean-close mark covers it
		}},
		{"stray temporary file", func(t *testing.T, dir string, segs []string) (string, result) {
			os.WriteFile(filepath.Join(dir, segmentName(n+1)+tmpSuffix), []byte("half made"), 0o644)
			return "", result{lastAfter: n}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			segs := buildLog(t, dir, n)
			if len(segs) < 4 {
				t.Fatalf("only %d segments", len(segs))
			}
			damaged, want := c.corrupt(t, dir, segs)
			l, err := Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
			if want.openErr == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				checkRange(t, l, 1, want.lastAfter)
				l.Close()
				if _, err := Verify(dir); err != nil {
					t.Fatalf("Verify after recovery: %v", err)
				}
				for _, e := range mustReadDir(t, dir) {
					if strings.HasSuffix(e, tmpSuffix) {
						t.Fatalf("%s left after Open", e)
					}
				}
				return
			}
			if !errors.Is(err, want.openErr) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("Open: %v, want %v", err, want.openErr)
			}
			if !strings.Contains(err.Error(), damaged) {
				t.Fatalf("Open's error %q does not name %s", err, damaged)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || (want.offset >= 0 && ce.Offset != want.offset) {
				t.Fatalf("Open's error %v: want a *CorruptError at offset %d", err, want.offset)
			}
			var rce *ringstore.CorruptError
			if !errors.As(err, &rce) || rce.Path != ce.Path || rce.Offset != ce.Offset || rce.What == "" ||
				err.Error() != fmt.Sprintf("wal: %s at offset %d: %s", rce.Path, rce.Offset, rce.What) {
				t.Fatalf("Open's error %v: as a *ringstore.CorruptError %+v, want %s at offset %d and the rest of the message", err, rce, ce.Path, ce.Offset)
			}
			if _, verr := Verify(dir); !errors.Is(verr, want.openErr) {
				t.Fatalf("Verify: %v, want %v", verr, want.openErr)
			}
			before := dirSnapshot(t, dir)
			if _, err := Open(dir, Options{SegmentSize: 64 << 10}); err == nil {
				t.Fatal("second Open of a damaged log succeeded")
			}
			if after := dirSnapshot(t, dir); !bytes.Equal(before, after) {
				t.Fatal("a failed Open changed the directory")
			}
			plan, err := PlanRepair(dir)
			if err != nil {
				t.Fatalf("PlanRepair: %v", err)
			}
			if after := dirSnapshot(t, dir); !bytes.Equal(before, after) {
				t.Fatal("PlanRepair changed the directory")
			}
			rep, err := Repair(dir, Options{Logf: t.Logf})
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
			t.Logf("repair: %q, lost from %d", rep.Actions, rep.LostFrom)
			// The dry run said what Repair then did, round by round.
			done := strings.NewReplacer("would rewrite", "rewrote", "would seal", "sealed", "would remove", "removed")
			var planned []string
			for _, a := range plan.Actions {
				planned = append(planned, done.Replace(a))
			}
			if !plan.DryRun || rep.DryRun || !slices.Equal(planned, rep.Actions) || plan.LostFrom != rep.LostFrom || plan.LastSeqAfter != rep.LastSeqAfter {
				t.Fatalf("PlanRepair: %q, lost from %d, last %d (dry run %v);\nRepair:     %q, lost from %d, last %d",
					plan.Actions, plan.LostFrom, plan.LastSeqAfter, plan.DryRun, rep.Actions, rep.LostFrom, rep.LastSeqAfter)
			}
			l, err = Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
			if err != nil {
				t.Fatalf("Open after Repair: %v", err)
			}
			defer l.Close()
			checkRange(t, l, 1, want.lastAfter)
			if seq, err := l.Append(payloadFor(want.lastAfter + 1)); err != nil || seq != want.lastAfter+1 {
				t.Fatalf("Append after Repair: %d, %v", seq, err)
			}
		})
	}
}

func mustBase(path string) uint64 {
	base, ok := parseSegmentName(filepath.Base(path))
	if !ok {
		panic(path)
	}
	return base
}

func mustReadDir(t *testing.T, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// dirSnapshot is every file's name and content.
func dirSnapshot(t *testing.T, dir string) []byte {
	var out []byte
	for _, name := range mustReadDir(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(append(out, name...), 0), b...)
	}
	return out
}

// TestSealedEntriesEndEarly checks that a sealed segment whose entries
// stop before the end its trailer records (a zero entry header: what a
// torn tail looks like in the last segment) is reported as damage naming
// the entries a cut would lose, never as an end of entries.
func TestSealedEntriesEndEarly(t *testing.T) {
	dir := t.TempDir()
	segs := buildLog(t, dir, 300)
	base := mustBase(segs[1])
	off := entryOffset(t, segs[1], base+3)
	modifyFile(t, segs[1], func(b []byte) []byte { clear(b[off : off+EntryHeaderSize]); return b })
	_, err := Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrEndOfEntries) || errors.Is(err, ErrTruncated) {
		t.Fatalf("Open: %v, want damage (ErrCorrupt) and neither an end of entries nor a truncation", err)
	}
	last := mustBase(segs[2]) - 1
	if ce.Path != segs[1] || ce.Offset != off || ce.LastSeq != base+2 || ce.FirstLost != base+3 || ce.LastLost != last || ce.Lost != last-base-2 {
		t.Fatalf("Open: %+v, want %s at offset %d, entries %d to %d lost", ce, segs[1], off, base+3, last)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("a cut here would lose entries %d to %d", base+3, last)) {
		t.Fatalf("Open's error %q does not say what a cut would lose", err)
	}
}

func TestBadSegmentName(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 10)
	os.WriteFile(filepath.Join(dir, "12"+segmentSuffix), nil, 0o644)
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "12"+segmentSuffix) {
		t.Fatalf("Open with a stray .seg file: %v", err)
	}
}

// TestTruncateFrontMetaInPlace: the first TruncateFront makes the two-slot
// file, later ones write the other slot in place, a log from before (one
// record) is moved to the two-slot file, and each is what Open reads.
func TestTruncateFrontMetaInPlace(t *testing.T) {
	dir := t.TempDir()
	buildLog(t, dir, 300)
	path := filepath.Join(dir, format.MetaName)
	if err := os.WriteFile(path, format.EncodeMeta(1), 0o644); err != nil { // the old layout
		t.Fatal(err)
	}
	l, err := Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		first uint64
		slot  int
	}{{50, 0}, {60, 1}, {70, 0}}
	for _, w := range want {
		if err := l.TruncateFront(w.first); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first, slot, _, err := format.DecodeMetaFile(b)
		if err != nil || len(b) != format.MetaFileSize || first != w.first || (w.first > 50 && slot != w.slot) {
			t.Fatalf("after TruncateFront(%d): %d bytes, first %d in slot %d, %v", w.first, len(b), first, slot, err)
		}
	}
	l.Close()
	l, err = Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if l.FirstSeq() != 70 {
		t.Fatalf("FirstSeq after reopen %d, want 70", l.FirstSeq())
	}
	if err := l.TruncateFront(200); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 200, 300)
	l.Close()
	// The segment holding the first seq gone: the error names the slot
	// that records it (slot 1 after four cuts).
	bases, err := Segments(dir)
	if err != nil || len(bases) < 2 {
		t.Fatalf("segments %v, %v", bases, err)
	}
	if err := os.Remove(SegmentPath(dir, bases[0])); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := Open(dir, Options{SegmentSize: 64 << 10}); !errors.As(err, &ce) || ce.Path != path || ce.Offset != format.MetaSlotSize+8 {
		t.Fatalf("Open without the first segment: %v; want damage in %s at offset %d", err, path, format.MetaSlotSize+8)
	}
}

// FuzzRecover opens a log whose only segment holds the fuzzer's bytes
// after a valid header: Open must not panic, and what it accepts must read
// back and verify. A recycled segment holds, past the fuzzer's bytes, the
// entries of an earlier use (seqs below its base) that its stale table
// records.
func FuzzRecover(f *testing.F) {
	for _, base := range []uint64{1, 1000} {
		var seed []byte
		for seq := base; seq < base+5; seq++ {
			seed = format.AppendEntry(seed, seq, payloadFor(seq))
		}
		recycled := base > 1
		f.Add(seed, false, recycled)
		f.Add(seed[:len(seed)-7], false, recycled)
		f.Add(append(seed[:30:30], 0xff), false, recycled)
		f.Add(seed, true, recycled)
	}
	f.Fuzz(fuzzRecoverOne)
}

func fuzzRecoverOne(t *testing.T, body []byte, sealed, recycled bool) {
	{
		const size = 64 << 10
		base := uint64(1)
		h := format.SegmentHeader{BaseSeq: base, Size: size}
		img := make([]byte, size)
		if recycled {
			base = 1000
			h = format.SegmentHeader{BaseSeq: base, Size: size, Reusable: true}
			// The earlier use: entries of seqs below base to the end.
			old := img[:0]
			for seq := uint64(1); len(old) < int(h.DataLimit())-2000; seq++ {
				old = format.AppendEntry(old, seq, payloadFor(seq))
			}
			copy(img, old)
			copy(img[format.StaleTableOffset(size):], format.EncodeStaleTable(img))
			clear(img[:pageSize])
		}
		limit := int(h.DataLimit())
		if len(body) > limit-SegmentHeaderSize {
			body = body[:limit-SegmentHeaderSize]
		}
		h.Encode(img)
		copy(img[SegmentHeaderSize:], body)
		if sealed {
			r := scanEntries(img, base, int64(limit))
			format.Trailer{LastSeq: r.last, DataEnd: uint64(len(body) + SegmentHeaderSize), DataCRC: segmentCRC(img, int64(len(body)+SegmentHeaderSize))}.Encode(img[size-TrailerSize:])
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segmentName(base)), img, 0o644); err != nil {
			t.Fatal(err)
		}
		// The syscall backend: a ring per run would make the fuzzer crawl.
		l, err := Open(dir, Options{SegmentSize: size, IOMode: ioengine.Syscall, Logf: func(string, ...any) {}, Unsafe: UnsafeOptions{NoSync: true}})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("Open: %v is neither ErrCorrupt nor ErrTruncated", err)
			}
			if !errors.Is(err, ringstore.ErrCorrupt) {
				t.Fatalf("Open: %v is not ringstore.ErrCorrupt", err)
			}
			return
		}
		for seq := l.FirstSeq(); seq <= l.LastSeq(); seq++ {
			if _, err := l.ReadAt(seq); err != nil {
				t.Fatalf("ReadAt(%d) of an accepted log: %v", seq, err)
			}
		}
		if _, err := l.Append([]byte("x")); err != nil {
			t.Fatalf("Append to an accepted log: %v", err)
		}
		l.Close()
		if _, err := Verify(dir); err != nil {
			t.Fatalf("Verify after Open accepted the log: %v", err)
		}
	}
}
