package wal

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// TestReaderBesideAWriter: a Reader reads, beside the process that holds
// the log open, the entries an Iterator of that log reads — across sealed
// segments and the active one, from any seq to any seq — with their files
// and offsets as Locate gives them, and changes no file.
func TestReaderBesideAWriter(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{SegmentSize: 64 << 10, IOMode: ioengine.Syscall, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := uint64(1); i <= 300; i++ {
		if _, err := l.Append(payloadFor(i)); err != nil {
			t.Fatal(err)
		}
	}
	if l.Stats().Segments < 3 {
		t.Fatalf("%d segments; the test wants sealed ones", l.Stats().Segments)
	}
	before := dirState(t, dir)
	r, err := NewReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, span := range [][2]uint64{{1, 300}, {0, ^uint64(0)}, {77, 201}, {300, 300}, {301, 400}} {
		next := max(span[0], 1)
		torn, err := r.Scan(span[0], span[1], func(e Entry) bool {
			if e.Seq != next {
				t.Fatalf("scan %v: seq %d, want %d", span, e.Seq, next)
			}
			path, off, err := l.Locate(e.Seq)
			if err != nil || e.Segment != path || e.Offset != off || !bytes.Equal(e.Payload, payloadFor(e.Seq)) {
				t.Fatalf("scan %v: seq %d at %s:%d (%d bytes); Locate says %s:%d, %v", span, e.Seq, e.Segment, e.Offset, len(e.Payload), path, off, err)
			}
			next++
			return true
		})
		if err != nil || torn != nil {
			t.Fatalf("scan %v: %v, torn %v", span, err, torn)
		}
		if want := min(span[1], 300) + 1; span[0] <= 300 && next != want {
			t.Errorf("scan %v ended before seq %d, want %d", span, next, want)
		}
	}
	stopped := 0
	if _, err := r.Scan(1, 300, func(Entry) bool { stopped++; return stopped < 5 }); err != nil || stopped != 5 {
		t.Errorf("fn asked to stop after 5: %d calls, %v", stopped, err)
	}
	// The writer's job goroutine may make the next segment meanwhile
	// (asked for once the active one passed half full): its files are not
	// the Reader's.
	after := dirState(t, dir)
	for _, m := range []map[string][]byte{before, after} {
		for name := range m {
			if strings.HasPrefix(name, sparePrefix) {
				delete(m, name)
			}
		}
	}
	if len(after) != len(before) {
		t.Errorf("files before %v, after %v", names(before), names(after))
	}
}

// TestReaderDamageAndTornTail: in a damaged segment the Reader hands out
// the entries before the damage, then the damage, marked ErrCorrupt and
// naming file and offset; a torn tail ends the entries and is described.
func TestReaderDamageAndTornTail(t *testing.T) {
	dir := t.TempDir()
	path, offs := writeEntries(t, dir, tailOpts(), 30)
	data, _ := os.ReadFile(path)

	// A torn tail: the start of a group that never finished.
	torn := bytes.Clone(data)
	copy(torn[offs[30]:], format.AppendEntry(nil, 31, payloadFor(31))[:20])
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	info, err := r.Scan(1, 100, func(Entry) bool { n++; return true })
	if err != nil || n != 30 || info == nil || info.DataEnd != offs[30] || info.LastSeq != 30 || info.TornTail != 20 {
		t.Errorf("torn tail: %d entries, %v, info %+v; want 30 and the tail at %d", n, err, info, offs[30])
	}

	// Damage: entry 12 of 30 flipped, valid entries after it.
	bad := bytes.Clone(data)
	bad[offs[11]+EntryHeaderSize+3] ^= 0x40
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	n = 0
	_, err = r.Scan(1, 100, func(Entry) bool { n++; return true })
	var ce *CorruptError
	if n != 11 || !errors.As(err, &ce) || ce.Path != path || ce.Offset != offs[11] || !errors.Is(err, ringstore.ErrCorrupt) {
		t.Errorf("damage: %d entries, %v; want 11, then damage at %s:%d", n, err, path, offs[11])
	}
	n = 0
	if _, err := r.Scan(1, 11, func(Entry) bool { n++; return true }); err != nil || n != 11 {
		t.Errorf("entries before the damage: %d, %v", n, err)
	}
}
