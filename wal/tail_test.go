package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// tailOpts are small groups and entries, so the in-flight window is a few
// KiB and damage past it can be made in a small segment.
func tailOpts() Options {
	return Options{SegmentSize: 1 << 20, MaxGroupBytes: 4096, MaxEntrySize: 2048, IOMode: ioengine.Syscall,
		Logf: func(string, ...any) {}}
}

// writeEntries appends n entries, one Append each (each acknowledged
// before the next), to a new log in dir, closes it and returns the path of
// its one segment and the offset of every entry (and the end after the
// last).
func writeEntries(t testing.TB, dir string, opts Options, n int) (string, []int64) {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	offs := make([]int64, 0, n+1)
	for i := 1; i <= n; i++ {
		seq, err := l.Append(payloadFor(uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		_, off, err := l.Locate(seq)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	path, _, _ := l.Locate(1)
	offs = append(offs, offs[n-1]+int64(EncodedLen(len(payloadFor(uint64(n))))))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path, offs
}

// TestDamageIsNotATornTail: bytes overwritten among acknowledged entries
// of the last segment, with valid entries after them, make Open fail with
// a *CorruptError that names the file, the offset and the entries a cut
// would lose — and the file is left as it was. The case of the report: 4
// bytes overwritten after entry 97 of 401.
func TestDamageIsNotATornTail(t *testing.T) {
	for _, c := range []struct {
		name    string
		entry   int   // the entry damaged
		at      int64 // offset into it
		garbage []byte
	}{
		{"4 bytes after entry 97 of 401", 98, 0, []byte{0xde, 0xad, 0xbe, 0xef}},
		{"one flipped payload byte", 200, EntryHeaderSize + 1, nil},
		{"one flipped header byte", 5, 13, nil},
		{"first entry", 1, EntryHeaderSize, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, offs := writeEntries(t, dir, tailOpts(), 401)
			at := offs[c.entry-1] + c.at
			data, _ := os.ReadFile(path)
			if c.garbage != nil {
				copy(data[at:], c.garbage)
			} else {
				data[at] ^= 0x40
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, tailOpts())
			if err == nil {
				st := l.Stats()
				l.Close()
				t.Fatalf("Open succeeded with LastSeq %d, %d tail cuts", st.LastSeq, st.TailCuts)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, ringstore.ErrCorrupt) {
				t.Fatalf("Open: %v: not a *CorruptError", err)
			}
			want := uint64(401 - c.entry + 1)
			if ce.Path != path || ce.Offset != offs[c.entry-1] || ce.FirstLost != uint64(c.entry) || ce.LastLost != 401 || ce.Lost != want {
				t.Errorf("%+v: want %s at offset %d, entries %d to 401 (%d) lost", ce, path, offs[c.entry-1], c.entry, want)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, data) {
				t.Error("Open changed the segment")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 2 { // the segment and wal.lock
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v after a failed Open", names)
			}
		})
	}
}

// TestTornTailIsCutAndReported: a group torn by a crash — its first
// sector lost, a later one written — is cut, and the cut is in Recovery
// and Stats: the bytes and the whole entries removed.
func TestTornTailIsCutAndReported(t *testing.T) {
	dir := t.TempDir()
	path, offs := writeEntries(t, dir, tailOpts(), 50)
	data, _ := os.ReadFile(path)
	// The "in-flight group": entries 51..53 written after entry 50, as the
	// log would encode them, with the sector holding the start of 51 lost.
	end := offs[50]
	var group []byte
	for seq := uint64(51); seq <= 53; seq++ {
		group = format.AppendEntry(group, seq, payloadFor(seq))
	}
	copy(data[end:], group)
	lost := (end/sectorSize + 1) * sectorSize // the rest of end's sector was not written
	clear(data[end:min(lost, end+int64(len(group)))])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, tailOpts())
	if err != nil {
		t.Fatalf("Open of a torn tail: %v", err)
	}
	defer l.Close()
	if l.LastSeq() != 50 {
		t.Errorf("LastSeq %d, want 50", l.LastSeq())
	}
	rec := l.Recovery()
	if len(rec.Cuts) != 1 {
		t.Fatalf("Recovery %+v: want one cut", rec)
	}
	c := rec.Cuts[0]
	if c.Path != path || c.Offset != end || c.LastSeq != 50 || c.Bytes != int64(len(group)) {
		t.Errorf("cut %+v: want %s at %d after 50, %d bytes", c, path, end, len(group))
	}
	if st := l.Stats(); st.TailCuts != 1 || st.TailCutBytes != uint64(c.Bytes) || st.TailCutEntries != uint64(c.Entries) {
		t.Errorf("stats %+v do not report the cut %+v", st, c)
	}
	t.Logf("%s", c)
}

// TestGarbagePastTheWindowIsDamage: bytes that are not entries after the
// last one, more than could have been in flight, are damage, not a tail.
func TestGarbagePastTheWindowIsDamage(t *testing.T) {
	dir := t.TempDir()
	path, offs := writeEntries(t, dir, tailOpts(), 20)
	data, _ := os.ReadFile(path)
	window := inFlightWindow(tailOpts())
	for i := offs[20]; i < offs[20]+window+100; i++ {
		data[i] = 0x5a
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, tailOpts())
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != offs[20] || ce.FirstLost != 21 {
		t.Fatalf("Open: %v, want a *CorruptError at %d", err, offs[20])
	}
	// Within the window the same bytes are a torn tail.
	data, _ = os.ReadFile(path)
	clear(data[offs[20]+window/2:])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, tailOpts())
	if err != nil {
		t.Fatalf("Open of garbage within the window: %v", err)
	}
	defer l.Close()
	if l.LastSeq() != 20 || len(l.Recovery().Cuts) != 1 {
		t.Errorf("LastSeq %d, recovery %+v", l.LastSeq(), l.Recovery())
	}
}

// FuzzFlippedByte: a byte flipped anywhere among the written entries of
// the last segment is reported as damage, or, within the last in-flight
// window, cut as a torn tail with the cut reported — never a silent Open
// with fewer entries.
func FuzzFlippedByte(f *testing.F) {
	f.Add(uint32(0), byte(1))
	f.Add(uint32(77), byte(0x80))
	f.Add(uint32(5000), byte(0xff))
	f.Add(uint32(40000), byte(0x10))
	base := f.TempDir()
	path0, offs := writeEntries(f, filepath.Join(base, "orig"), tailOpts(), 60)
	orig, err := os.ReadFile(path0)
	if err != nil {
		f.Fatal(err)
	}
	written := offs[60] - offs[0]
	f.Fuzz(func(t *testing.T, at uint32, mask byte) {
		if mask == 0 {
			mask = 1
		}
		pos := offs[0] + int64(at)%written
		dir := t.TempDir()
		data := bytes.Clone(orig)
		data[pos] ^= mask
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(path0)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, tailOpts())
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip at %d: %v is not corruption", pos, err)
			}
			return
		}
		defer l.Close()
		if l.LastSeq() == 60 {
			t.Fatalf("flip at %d: every entry read back", pos)
		}
		cuts := l.Recovery().Cuts
		if len(cuts) != 1 {
			t.Fatalf("flip at %d: %d entries of 60 and no cut reported", pos, l.LastSeq())
		}
		if offs[60]-cuts[0].Offset > inFlightWindow(tailOpts()) {
			t.Fatalf("flip at %d: cut at %d, more than the in-flight window before the end %d", pos, cuts[0].Offset, offs[60])
		}
	})
}
