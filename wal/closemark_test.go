package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/wal/internal/format"
)

// crashCopy copies the files of the open log l into a new directory: the
// state a crash would leave now that every append has been acknowledged
// (nothing in flight, no clean-close mark).
func crashCopy(t *testing.T, l *Log) string {
	t.Helper()
	dst := t.TempDir()
	for _, name := range mustReadDir(t, l.Dir()) {
		if name == lockName || strings.HasSuffix(name, tmpSuffix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(l.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// appendSeqs appends payloadFor(from..to) to l.
func appendSeqs(t *testing.T, l *Log, from, to uint64) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		if got, err := l.Append(payloadFor(seq)); err != nil || got != seq {
			t.Fatalf("Append(%d): %d, %v", seq, got, err)
		}
	}
}

func TestCleanCloseMark(t *testing.T) {
	const n = 50 // in one 64 KiB segment: the last entry is in the active one
	for _, recycle := range []bool{false, true} {
		opts := Options{SegmentSize: 64 << 10, RecycleSegments: recycle}
		name := "fresh"
		if recycle {
			name = "recycle"
		}
		t.Run(name+"/clean close, damaged last entry: corruption", func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, opts)
			appendSeqs(t, l, 1, n)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			seg := lastSegment(t, dir)
			v, err := Verify(dir)
			if err != nil || !v.Segments[len(v.Segments)-1].Closed {
				t.Fatalf("Verify after a clean close: %+v, %v; want the last segment marked closed", v.Segments, err)
			}
			off := entryOffset(t, seg, n)
			flipByte(t, seg, off+EntryHeaderSize+3)
			before := dirSnapshot(t, dir)
			_, err = Open(dir, Options{SegmentSize: 64 << 10, Logf: t.Logf})
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want a *CorruptError", err)
			}
			if ce.Path != seg || ce.Offset != off || ce.FirstLost != n || ce.LastLost != n || ce.Lost != 1 {
				t.Fatalf("Open: %+v, want %s at offset %d losing entry %d", ce, seg, off, n)
			}
			if !strings.Contains(err.Error(), "closed cleanly") {
				t.Fatalf("Open's error does not say the log was closed cleanly: %v", err)
			}
			if after := dirSnapshot(t, dir); string(before) != string(after) {
				t.Fatal("a failed Open changed the directory")
			}
			if _, err := Verify(dir); !errors.As(err, &ce) || ce.Offset != off {
				t.Fatalf("Verify: %v, want damage at offset %d", err, off)
			}
			if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read-only Open: %v, want corruption", err)
			}
			if rep, err := Repair(dir, Options{Logf: t.Logf}); err != nil || rep.LostFrom != n {
				t.Fatalf("Repair: %+v, %v; want entries from %d lost", rep, err, n)
			}
			l = openTest(t, dir, opts)
			defer l.Close()
			checkRange(t, l, 1, n-1)
		})
		t.Run(name+"/crash, torn last entry: cut", func(t *testing.T) {
			l := openTest(t, t.TempDir(), opts)
			appendSeqs(t, l, 1, n)
			crashed := crashCopy(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			seg := lastSegment(t, crashed)
			flipByte(t, seg, entryOffset(t, seg, n)+EntryHeaderSize+3)
			v, err := Verify(crashed)
			if err != nil || v.Segments[len(v.Segments)-1].TornTail == 0 || v.Segments[len(v.Segments)-1].Closed {
				t.Fatalf("Verify: %+v, %v; want a torn tail and no mark", v.Segments, err)
			}
			l = openTest(t, crashed, opts)
			defer l.Close()
			checkRange(t, l, 1, n-1)
			if c := l.Recovery().Cuts; len(c) != 1 || c[0].LastSeq != n-1 {
				t.Fatalf("recovery cuts %+v, want one after seq %d", c, n-1)
			}
		})
		t.Run(name+"/clean close, reopen, append, crash, torn tail: cut", func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, opts)
			appendSeqs(t, l, 1, n)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openTest(t, dir, opts)
			// Open erased the mark before it returned.
			if v, err := Verify(dir); err != nil || v.Segments[len(v.Segments)-1].Closed {
				t.Fatalf("Verify of the reopened log: %+v, %v; want no mark", v.Segments, err)
			}
			appendSeqs(t, l, n+1, n+5)
			crashed := crashCopy(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			seg := lastSegment(t, crashed)
			flipByte(t, seg, entryOffset(t, seg, n+5)+EntryHeaderSize+3)
			l = openTest(t, crashed, opts)
			defer l.Close()
			checkRange(t, l, 1, n+4)
			if c := l.Recovery().Cuts; len(c) != 1 {
				t.Fatalf("recovery cuts %+v, want one", c)
			}
		})
		t.Run(name+"/read-only open keeps the mark; reopen and close writes it again", func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, opts)
			appendSeqs(t, l, 1, n)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			before := dirSnapshot(t, dir)
			ro, err := Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, ro, 1, n)
			ro.Close()
			if after := dirSnapshot(t, dir); string(before) != string(after) {
				t.Fatal("a read-only Open changed the directory")
			}
			l = openTest(t, dir, opts)
			appendSeqs(t, l, n+1, n+3)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			seg := lastSegment(t, dir)
			flipByte(t, seg, entryOffset(t, seg, n+3)+EntryHeaderSize)
			if _, err := Open(dir, Options{Logf: t.Logf}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open after the second clean close: %v, want corruption", err)
			}
		})
	}
}

func TestCleanCloseMarkBytes(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Options{})
	appendSeqs(t, l, 1, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := lastSegment(t, dir)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		bad  func([]byte)
	}{
		// A mark that is not whole reads as no mark: a torn write of
		// the mark itself is a torn seal, cut without loss.
		{"mark torn", func(m []byte) { m[30] ^= 1 }},
		// A whole mark that does not match the entries is damage.
		{"mark names a later end", func(m []byte) {
			tr, _ := format.DecodeTrailer(m)
			tr.LastSeq++
			tr.Encode(m)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			img := append([]byte(nil), b...)
			c.bad(img[len(img)-TrailerSize:])
			if err := os.WriteFile(filepath.Join(d, filepath.Base(seg)), img, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(d, Options{Logf: t.Logf})
			if c.name == "mark torn" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer l.Close()
				checkRange(t, l, 1, 3)
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.FirstLost != 4 || ce.Lost != 1 {
				t.Fatalf("Open: %v, want damage losing entry 4", err)
			}
		})
	}
}
