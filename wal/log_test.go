package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// payloadFor is the payload the tests append as entry seq: its length and
// bytes follow from seq, so any entry read back can be checked.
func payloadFor(seq uint64) []byte {
	n := int(seq*7919%1500) + 1
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seq*31 + uint64(i))
	}
	return b
}

var testModes = []struct {
	name string
	mode ioengine.IOMode
}{{"uring", ioengine.URing}, {"syscall", ioengine.Syscall}}

func openTest(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	if opts.SegmentSize == 0 {
		opts.SegmentSize = 64 << 10
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

func checkRange(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	if l.FirstSeq() != first || l.LastSeq() != last {
		t.Fatalf("log holds %d..%d, want %d..%d", l.FirstSeq(), l.LastSeq(), first, last)
	}
	for seq := first; seq <= last; seq++ {
		got, err := l.ReadAt(seq)
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", seq, err)
		}
		if !bytes.Equal(got, payloadFor(seq)) {
			t.Fatalf("ReadAt(%d): %d bytes, not the payload appended", seq, len(got))
		}
	}
	if _, err := l.ReadAt(last + 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadAt(%d) past the end: %v, want ErrNotFound", last+1, err)
	}
	if first > 1 {
		if _, err := l.ReadAt(first - 1); !errors.Is(err, ErrNotFound) {
			t.Fatalf("ReadAt(%d) before the start: %v, want ErrNotFound", first-1, err)
		}
	}
}

func TestAppendReadReopen(t *testing.T) {
	for _, m := range testModes {
		t.Run("mode="+m.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, Options{IOMode: m.mode})
			const n = 300 // ~ 225 KiB: several 64 KiB segments
			for seq := uint64(1); seq <= n; seq++ {
				got, err := l.Append(payloadFor(seq))
				if err != nil || got != seq {
					t.Fatalf("Append %d: seq %d, %v", seq, got, err)
				}
			}
			checkRange(t, l, 1, n)
			st := l.Stats()
			if st.Rotations < 3 || st.Segments < 3 || st.Entries != n || st.Flushes != n {
				t.Fatalf("stats %+v: want >= 3 rotations, %d entries in %d flushes", st, n, n)
			}
			if c, p50 := st.FlushLatency.Count(), st.FlushLatency.Quantile(0.5); c != st.Flushes || p50 <= 0 || p50 > time.Second {
				t.Fatalf("flush latency: %d counted (%d flushes), median %v", c, st.Flushes, p50)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append([]byte("x")); !errors.Is(err, ErrClosed) {
				t.Fatalf("Append after Close: %v", err)
			}
			l = openTest(t, dir, Options{IOMode: m.mode})
			checkRange(t, l, 1, n)
			if seq, err := l.Append(payloadFor(n + 1)); err != nil || seq != n+1 {
				t.Fatalf("Append after reopen: %d, %v", seq, err)
			}
			checkRange(t, l, 1, n+1)
			l.Close()
			l = openTest(t, dir, Options{IOMode: m.mode, LazyVerify: true})
			checkRange(t, l, 1, n+1)
			l.Close()
		})
	}
}

func TestConcurrentAppendsShareFlushes(t *testing.T) {
	for _, m := range testModes {
		t.Run("mode="+m.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, Options{IOMode: m.mode, SegmentSize: 1 << 20})
			const writers, each = 32, 50
			var mu sync.Mutex
			got := map[uint64][]byte{}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						p := []byte(fmt.Sprintf("writer %d entry %d", w, i))
						seq, err := l.Append(p)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						if _, dup := got[seq]; dup {
							t.Errorf("seq %d given twice", seq)
						}
						got[seq] = p
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(got) != writers*each || l.LastSeq() != writers*each {
				t.Fatalf("%d entries, last seq %d", len(got), l.LastSeq())
			}
			for seq, want := range got {
				p, err := l.ReadAt(seq)
				if err != nil || !bytes.Equal(p, want) {
					t.Fatalf("ReadAt(%d) = %q, %v; want %q", seq, p, err, want)
				}
			}
			st := l.Stats()
			t.Logf("%d entries in %d flushes (%.1f per flush)", st.Entries, st.Flushes, st.EntriesPerFlush())
			if st.Flushes >= st.Entries {
				t.Fatalf("%d flushes for %d concurrent entries: no grouping", st.Flushes, st.Entries)
			}
			l.Close()
		})
	}
}

func TestAppendBatch(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	defer l.Close()
	var batch [][]byte
	for seq := uint64(1); seq <= 40; seq++ {
		batch = append(batch, payloadFor(seq))
	}
	first, err := l.AppendBatch(batch)
	if err != nil || first != 1 {
		t.Fatalf("AppendBatch: %d, %v", first, err)
	}
	checkRange(t, l, 1, 40)
	if _, err := l.AppendBatch([][]byte{make([]byte, 40<<10), make([]byte, 40<<10)}); !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("batch larger than a segment: %v", err)
	}
	if _, err := l.Append(make([]byte, 64<<10)); !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("entry larger than a segment: %v", err)
	}
	if seq, err := l.AppendBatch(nil); err != nil || seq != 41 {
		t.Fatalf("empty batch: %d, %v", seq, err)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Options{})
	for seq := uint64(1); seq <= 200; seq++ {
		if _, err := l.Append(payloadFor(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateFront(50); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 50, 200)
	if err := l.TruncateBack(150); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 50, 150)
	for seq := uint64(151); seq <= 170; seq++ {
		if got, err := l.Append(payloadFor(seq)); err != nil || got != seq {
			t.Fatalf("Append after TruncateBack: %d, %v", got, err)
		}
	}
	checkRange(t, l, 50, 170)
	l.Close()
	l = openTest(t, dir, Options{})
	checkRange(t, l, 50, 170)
	if err := l.TruncateBack(10); err == nil {
		t.Fatal("TruncateBack before the first entry succeeded")
	}
	// Empty the log from the front past its end: the next append gets 1000.
	if err := l.TruncateFront(1000); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1000, 999)
	if st := l.Stats(); st.Segments != 0 {
		t.Fatalf("%d segments left after emptying the log", st.Segments)
	}
	for seq := uint64(1000); seq <= 1010; seq++ {
		if got, err := l.Append(payloadFor(seq)); err != nil || got != seq {
			t.Fatalf("Append after TruncateFront(1000): %d, %v", got, err)
		}
	}
	l.Close()
	l = openTest(t, dir, Options{})
	checkRange(t, l, 1000, 1010)
	// Empty it from the back.
	if err := l.TruncateBack(999); err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1000, 999)
	l.Close()
	l = openTest(t, dir, Options{})
	checkRange(t, l, 1000, 999)
	if got, err := l.Append(payloadFor(1000)); err != nil || got != 1000 {
		t.Fatalf("Append: %d, %v", got, err)
	}
	l.Close()
}

func TestFollowAndIterator(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{})
	defer l.Close()
	for seq := uint64(1); seq <= 10; seq++ {
		l.Append(payloadFor(seq))
	}
	it := l.Iterator(4)
	n := uint64(4)
	for it.Next() {
		if it.Seq() != n || !bytes.Equal(it.Payload(), payloadFor(n)) {
			t.Fatalf("iterator at %d: seq %d", n, it.Seq())
		}
		n++
	}
	if it.Err() != nil || n != 11 {
		t.Fatalf("iterator stopped at %d: %v", n, it.Err())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := make(chan uint64, 100)
	errc := make(chan error, 1)
	go func() {
		errc <- l.Follow(ctx, 8, func(seq uint64, p []byte) error {
			if !bytes.Equal(p, payloadFor(seq)) {
				return fmt.Errorf("seq %d: wrong payload", seq)
			}
			seen <- seq
			if seq == 30 {
				return errStop
			}
			return nil
		})
	}()
	for seq := uint64(11); seq <= 30; seq++ {
		time.Sleep(time.Millisecond)
		l.Append(payloadFor(seq))
	}
	if err := <-errc; !errors.Is(err, errStop) {
		t.Fatalf("Follow: %v", err)
	}
	close(seen)
	want := uint64(8)
	for seq := range seen {
		if seq != want {
			t.Fatalf("Follow gave %d, want %d", seq, want)
		}
		want++
	}
	if want != 31 {
		t.Fatalf("Follow stopped before 30: %d", want)
	}
}

var errStop = errors.New("stop")

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Options{})
	defer l.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{SegmentSize: 1000}, {SegmentSize: 4096}, {MaxEntrySize: -1}, {PipelineDepth: 100}, {IOMode: 99}, {RecycleSegments: true, PipelineDepth: 2}} {
		if _, err := Open(t.TempDir(), o); err == nil {
			t.Errorf("Open with %s succeeded", o.String())
		}
	}
}

func segPaths(t testing.TB, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*"+segmentSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNoLeftoverFiles(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Options{})
	for seq := uint64(1); seq <= 100; seq++ {
		l.Append(payloadFor(seq))
	}
	l.TruncateFront(60)
	l.Close()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == tmpSuffix {
			t.Fatalf("leftover %s", e.Name())
		}
	}
}

// TestReopenWithLargerSegments: after a reopen with larger segments, an
// entry too big for the old size goes into a new segment; an empty
// leftover segment at the start of an emptied log is dropped.
func TestReopenWithLargerSegments(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Options{SegmentSize: 64 << 10})
	l.Append(payloadFor(1))
	l.TruncateFront(10) // empty: no segment, the next append gets 10
	l.Close()
	// An empty 64 KiB segment for seq 10, as a crash right after a
	// rotation leaves it: it holds nothing at or after the first seq.
	img := make([]byte, 64<<10)
	format.SegmentHeader{BaseSeq: 10, Size: 64 << 10}.Encode(img)
	if err := os.WriteFile(filepath.Join(dir, segmentName(10)), img, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, Options{SegmentSize: 1 << 20})
	defer l.Close()
	big := make([]byte, 200<<10)
	if seq, err := l.Append(big); err != nil || seq != 10 {
		t.Fatalf("Append of %d bytes after reopening with 1 MiB segments: %d, %v", len(big), seq, err)
	}
	if got, err := l.ReadAt(10); err != nil || len(got) != len(big) {
		t.Fatalf("ReadAt(10): %d bytes, %v", len(got), err)
	}
}

// TestLocate: every entry, in sealed segments and in the active one, is at
// the offset Locate names in the file it names; seqs outside the log are
// ErrNotFound.
func TestLocate(t *testing.T) {
	l := openTest(t, t.TempDir(), Options{IOMode: ioengine.Syscall})
	defer l.Close()
	const n = 200 // several 64 KiB segments
	for seq := uint64(1); seq <= n; seq++ {
		if _, err := l.Append(payloadFor(seq)); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{}
	for seq := uint64(1); seq <= n; seq++ {
		path, off, err := l.Locate(seq)
		if err != nil {
			t.Fatalf("Locate(%d): %v", seq, err)
		}
		b, ok := files[path]
		if !ok {
			if b, err = os.ReadFile(path); err != nil {
				t.Fatalf("Locate(%d) names %s: %v", seq, path, err)
			}
			files[path] = b
		}
		got, payload, _, err := format.DecodeEntry(b[off:], len(b))
		if err != nil || got != seq || !bytes.Equal(payload, payloadFor(seq)) {
			t.Fatalf("Locate(%d) = %s offset %d: the entry there is seq %d (%v)", seq, path, off, got, err)
		}
	}
	if len(files) < 3 {
		t.Errorf("the entries lie in %d files: want several segments", len(files))
	}
	for _, seq := range []uint64{0, n + 1} {
		if _, _, err := l.Locate(seq); !errors.Is(err, ErrNotFound) {
			t.Errorf("Locate(%d): %v, want ErrNotFound", seq, err)
		}
	}
}
