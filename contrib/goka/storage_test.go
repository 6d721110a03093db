package gokastore

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lovoo/goka/storage"
	"github.com/ringstore/ringstore/kv"
)

// testOptions keep the store small so tests flush and compact.
func testOptions() Options {
	return Options{KV: kv.Options{MemtableSize: 256 << 10, CacheSize: 1 << 20}}
}

func mustBuild(t *testing.T, b storage.Builder, topic string, p int32) storage.Storage {
	t.Helper()
	st, err := b(topic, p)
	if err != nil {
		t.Fatalf("build %s/%d: %v", topic, p, err)
	}
	if err := st.Open(); err != nil {
		t.Fatalf("open %s/%d: %v", topic, p, err)
	}
	return st
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func collect(t *testing.T, it storage.Iterator) map[string]string {
	t.Helper()
	defer it.Release()
	m := map[string]string{}
	var last []byte
	for it.Next() {
		k := it.Key()
		if last != nil && bytes.Compare(k, last) <= 0 {
			t.Fatalf("iterator out of order: %q after %q", k, last)
		}
		last = append(last[:0], k...)
		v, err := it.Value()
		must(t, err)
		m[string(k)] = string(v)
	}
	must(t, it.Err())
	return m
}

// TestGetSetHasDelete follows goka's storage TestGetHas and TestSetGet.
func TestGetSetHasDelete(t *testing.T) {
	b := Builder(t.TempDir(), testOptions())
	st := mustBuild(t, b, "tbl", 0)
	defer st.Close()

	has, err := st.Has("example1")
	must(t, err)
	if has {
		t.Fatal("Has on an empty storage")
	}
	v, err := st.Get("example1")
	must(t, err)
	if v != nil {
		t.Fatalf("Get of a missing key = %q, want nil", v)
	}
	must(t, st.Set("example1", []byte("example-message")))
	if has, _ := st.Has("example1"); !has {
		t.Fatal("Has after Set is false")
	}
	if v, _ := st.Get("example1"); string(v) != "example-message" {
		t.Fatalf("Get = %q", v)
	}
	must(t, st.Delete("example1"))
	if has, _ := st.Has("example1"); has {
		t.Fatal("Has after Delete is true")
	}
	// An empty value is a value; nil is refused with a message naming it.
	must(t, st.Set("empty", []byte{}))
	if v, _ := st.Get("empty"); v == nil || len(v) != 0 {
		t.Fatalf("Get of an empty value = %#v, want non-nil empty", v)
	}
	if err := st.Set("nil-value", nil); err == nil || !strings.Contains(err.Error(), "nil value") {
		t.Fatalf("Set(nil) = %v, want an error about the nil value", err)
	}
	if has, _ := st.Has("nil-value"); has {
		t.Fatal("a refused nil value was stored")
	}
}

// TestOffsets follows goka's TestLeveldbStorage: getset, set-reopen and
// mark-recovered-reopen.
func TestOffsets(t *testing.T) {
	dir := t.TempDir()
	b := Builder(dir, testOptions())
	st := mustBuild(t, b, "tbl", 3)
	off, err := st.GetOffset(-2)
	must(t, err)
	if off != -2 {
		t.Fatalf("GetOffset of a new partition = %d, want the default", off)
	}
	must(t, st.SetOffset(100))
	if off, _ := st.GetOffset(0); off != 100 {
		t.Fatalf("GetOffset = %d, want 100", off)
	}
	must(t, st.Close())
	st = mustBuild(t, b, "tbl", 3)
	if off, _ := st.GetOffset(0); off != 100 {
		t.Fatalf("after reopen GetOffset = %d, want 100", off)
	}
	must(t, st.SetOffset(150))
	must(t, st.MarkRecovered())
	must(t, st.SetOffset(151))
	must(t, st.Close())
	st = mustBuild(t, b, "tbl", 3)
	defer st.Close()
	if off, _ := st.GetOffset(0); off != 151 {
		t.Fatalf("after MarkRecovered, SetOffset and reopen GetOffset = %d, want 151", off)
	}
	// Another partition of the same topic has no offset.
	st4 := mustBuild(t, b, "tbl", 4)
	defer st4.Close()
	if off, _ := st4.GetOffset(-1); off != -1 {
		t.Fatalf("partition 4 has offset %d of partition 3", off)
	}
}

// TestIterators follows goka's TestMemIter.
func TestIterators(t *testing.T) {
	b := Builder(t.TempDir(), testOptions())
	st := mustBuild(t, b, "tbl", 0)
	defer st.Close()
	other := mustBuild(t, b, "tbl", 1)
	defer other.Close()
	must(t, st.SetOffset(7))
	must(t, st.MarkRecovered()) // the offset record is in the store now
	must(t, st.Set("__offset", []byte("a user key")))
	for i := 1; i <= 3; i++ {
		must(t, st.Set(fmt.Sprintf("key-%d", i), []byte(fmt.Sprintf("val-%d", i))))
		must(t, other.Set(fmt.Sprintf("key-%d", i), []byte("other")))
	}
	must(t, st.Set("kez", []byte("z")))

	it, err := st.Iterator()
	must(t, err)
	it.Release()
	if it.Next() || it.Seek([]byte("key-2")) {
		t.Fatal("a released iterator is not exhausted")
	}
	it.Release()

	want := map[string]string{"__offset": "a user key", "key-1": "val-1", "key-2": "val-2", "key-3": "val-3", "kez": "z"}
	it, err = st.Iterator()
	must(t, err)
	// Writes after the iterator was made are not seen.
	must(t, st.Set("key-4", []byte("late")))
	got := collect(t, it)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Iterator = %v, want %v", got, want)
	}
	if it.Key() != nil {
		t.Fatal("Key after the end is not nil")
	}
	if v, err := it.Value(); v != nil || err != nil {
		t.Fatal("Value after the end is not nil")
	}

	// An empty limit means the prefix of start, as goka's LevelDB storage.
	it, err = st.IteratorWithRange([]byte("key-"), nil)
	must(t, err)
	if got := collect(t, it); len(got) != 4 || got["key-4"] != "late" {
		t.Fatalf("prefix range = %v", got)
	}
	it, err = st.IteratorWithRange([]byte("key-2"), []byte("kez"))
	must(t, err)
	if got := collect(t, it); fmt.Sprint(got) != "map[key-2:val-2 key-3:val-3 key-4:late]" {
		t.Fatalf("[key-2, kez) = %v", got)
	}
	it, err = st.IteratorWithRange([]byte("z"), []byte("a"))
	must(t, err)
	if got := collect(t, it); len(got) != 0 {
		t.Fatalf("an empty range gave %v", got)
	}

	// Seek lands on the key (Key shows it at once) and Next moves past it.
	it, err = st.Iterator()
	must(t, err)
	if !it.Seek([]byte("key-2")) || string(it.Key()) != "key-2" {
		t.Fatalf("Seek(key-2) is on %q", it.Key())
	}
	if v, _ := it.Value(); string(v) != "val-2" {
		t.Fatalf("Value after Seek = %q", v)
	}
	if !it.Next() || string(it.Key()) != "key-3" {
		t.Fatalf("Next after Seek is on %q", it.Key())
	}
	if !it.Seek([]byte("key-0")) || string(it.Key()) != "key-1" {
		t.Fatalf("Seek back to key-0 is on %q", it.Key())
	}
	if it.Seek([]byte("zzz")) || it.Key() != nil {
		t.Fatal("Seek past the end found a key")
	}
	it.Release()
	// A ranged iterator's Seek stays in its range.
	it, err = st.IteratorWithRange([]byte("key-2"), []byte("key-3"))
	must(t, err)
	if !it.Seek([]byte("a")) || string(it.Key()) != "key-2" || it.Next() {
		t.Fatalf("Seek below a range is on %q", it.Key())
	}
	it.Release()
}

// TestTopicsDoNotMix checks that no partition sees another's keys, for
// topic names that are prefixes of each other.
func TestTopicsDoNotMix(t *testing.T) {
	b := Builder(t.TempDir(), testOptions())
	names := []struct {
		topic string
		p     int32
	}{{"a", 0}, {"a", 1}, {"a\x00", 0}, {"ab", 0}, {"a", 256}, {"a\x00\x00\x00\x00\x01", 0}}
	var sts []storage.Storage
	for i, n := range names {
		st := mustBuild(t, b, n.topic, n.p)
		defer st.Close()
		must(t, st.Set("k", []byte(fmt.Sprint(i))))
		must(t, st.Set("", []byte(fmt.Sprint(i))))
		must(t, st.SetOffset(int64(i)))
		sts = append(sts, st)
	}
	for i, st := range sts {
		it, err := st.Iterator()
		must(t, err)
		got := collect(t, it)
		want := fmt.Sprintf("map[:%d k:%d]", i, i)
		if fmt.Sprint(got) != want {
			t.Fatalf("%q/%d holds %v, want %v", names[i].topic, names[i].p, got, want)
		}
		if off, _ := st.GetOffset(-1); off != int64(i) {
			t.Fatalf("%q/%d offset %d", names[i].topic, names[i].p, off)
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	b := Builder(dir, testOptions())
	for _, c := range []struct {
		topic string
		p     int32
		want  string
	}{
		{"", 0, "empty topic"},
		{"t", -1, "negative partition -1"},
		{strings.Repeat("x", 1<<16), 0, "longer than 65535"},
	} {
		if _, err := b(c.topic, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("build(%.10q, %d) = %v, want an error with %q", c.topic, c.p, err, c.want)
		}
	}
	st := mustBuild(t, b, "t", 0)
	if _, err := b("t", 0); err == nil || !strings.Contains(err.Error(), "already open") {
		t.Fatalf("a second build of an open partition = %v", err)
	}
	must(t, st.Close())
	if err := st.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if _, err := st.Get("k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close = %v, want ErrClosed", err)
	}
	for _, o := range []Options{{FlushInterval: -1}, {RecoveryOffsetEvery: -1}, {KV: kv.Options{ReadOnly: true}}} {
		if _, err := Open(filepath.Join(dir, "x"), o); err == nil {
			t.Errorf("Open with %+v succeeded", o)
		}
	}
	// A damaged offset record is an error naming the partition.
	s, err := Open(filepath.Join(dir, "bad"), testOptions())
	must(t, err)
	p, _ := partitionPrefix("t", 9)
	must(t, s.DB().Put(offsetKey(p), []byte("xyz")))
	if _, err := s.Build("t", 9); err == nil || !strings.Contains(err.Error(), `topic "t" partition 9 has 3 bytes`) {
		t.Fatalf("build over a 3-byte offset record = %v", err)
	}
	must(t, s.Close())
}

// TestRefCount checks that the shared store stays open until the last
// partition closes, and that the Builder opens it again afterwards.
func TestRefCount(t *testing.T) {
	dir := t.TempDir()
	b := Builder(dir, testOptions())
	a := mustBuild(t, b, "t", 0)
	c := mustBuild(t, b, "t", 1)
	if a.(*Storage).s != c.(*Storage).s {
		t.Fatal("two partitions of one builder have different stores")
	}
	must(t, a.Set("k", []byte("a")))
	must(t, a.Close())
	must(t, c.Set("k", []byte("c")))
	if v, err := c.Get("k"); err != nil || string(v) != "c" {
		t.Fatalf("after closing a sibling Get = %q, %v", v, err)
	}
	first := c.(*Storage).s
	must(t, c.Close())
	if _, err := first.Build("t", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Build on a store whose last partition closed = %v, want ErrClosed", err)
	}
	// Open's own reference is dropped once, however often Close is called.
	s, err := Open(filepath.Join(dir, "owned"), testOptions())
	must(t, err)
	st, err := s.Build("t", 0)
	must(t, err)
	must(t, s.Close())
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Store.Close = %v, want ErrClosed", err)
	}
	must(t, st.Set("k", []byte("still open")))
	must(t, st.Close())

	a = mustBuild(t, b, "t", 0)
	defer a.Close()
	if a.(*Storage).s == first {
		t.Fatal("the builder reused a closed store")
	}
	if v, _ := a.Get("k"); string(v) != "a" {
		t.Fatalf("after reopen Get = %q", v)
	}
}

// TestConcurrentReadersOneWriter runs readers beside each partition's
// writer and a SetOffset goroutine, as goka does (under -race in CI).
func TestConcurrentReadersOneWriter(t *testing.T) {
	b := Builder(t.TempDir(), Options{KV: kv.Options{MemtableSize: 64 << 10, CacheSize: 256 << 10}, FlushInterval: 5e6})
	const parts, n = 4, 600
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for p := int32(0); p < parts; p++ {
		st := mustBuild(t, b, "t", p)
		defer st.Close()
		must(t, st.MarkRecovered())
		offs := make(chan int64, n)
		wg.Add(3)
		go func() { // the writer
			defer wg.Done()
			defer close(offs)
			for i := 0; i < n; i++ {
				if err := st.Set(fmt.Sprintf("k%03d", i%97), []byte(fmt.Sprint(i))); err != nil {
					errs <- err
					return
				}
				offs <- int64(i)
			}
		}()
		go func() { // the producer's callbacks
			defer wg.Done()
			for o := range offs {
				if err := st.SetOffset(o); err != nil {
					errs <- err
				}
			}
		}()
		go func() { // a reader
			defer wg.Done()
			for i := 0; i < n; i++ {
				if _, err := st.Get(fmt.Sprintf("k%03d", i%97)); err != nil {
					errs <- err
					return
				}
				if i%100 == 0 {
					it, err := st.Iterator()
					if err != nil {
						errs <- err
						return
					}
					for it.Next() {
					}
					it.Release()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCompactionDefaults: a store left to its defaults compacts with the
// store's own settings; what the caller sets is kept; a stop trigger left
// out stays above a compaction trigger that is set.
func TestCompactionDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.KV.L0CompactionTrigger != DefaultL0CompactionTrigger || o.KV.L0StopWritesTrigger != DefaultL0StopWritesTrigger || o.KV.BaseLevelSize != DefaultBaseLevelSize || o.KV.BloomBitsPerKey != DefaultBloomBitsPerKey {
		t.Fatalf("defaults: L0 trigger %d, stop %d, base %d, bloom bits %d", o.KV.L0CompactionTrigger, o.KV.L0StopWritesTrigger, o.KV.BaseLevelSize, o.KV.BloomBitsPerKey)
	}
	o, err = Options{KV: kv.Options{L0CompactionTrigger: 4, L0StopWritesTrigger: 12, BaseLevelSize: 64 << 20, BloomBitsPerKey: 10}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.KV.L0CompactionTrigger != 4 || o.KV.L0StopWritesTrigger != 12 || o.KV.BaseLevelSize != 64<<20 || o.KV.BloomBitsPerKey != 10 {
		t.Fatalf("set: L0 trigger %d, stop %d, base %d, bloom bits %d", o.KV.L0CompactionTrigger, o.KV.L0StopWritesTrigger, o.KV.BaseLevelSize, o.KV.BloomBitsPerKey)
	}
	o, err = Options{KV: kv.Options{L0CompactionTrigger: 30}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.KV.L0StopWritesTrigger <= 30 {
		t.Fatalf("L0 trigger 30: stop %d", o.KV.L0StopWritesTrigger)
	}
	s, err := Open(t.TempDir(), Options{KV: kv.Options{L0CompactionTrigger: 30, CacheSize: 1 << 20, MemtableSize: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveredDrainsL0 restores more than a memtable's bytes: MarkRecovered
// leaves L0 empty (the restore's tables merged below) unless
// NoCompactionWait, and a small restore leaves L0 as its triggers do. The
// values read back either way.
func TestRecoveredDrainsL0(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records int
		noWait  bool
		emptyL0 bool
	}{
		{"large", 20000, false, true},
		{"large-nowait", 20000, true, false},
		{"small", 100, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			o.NoCompactionWait = tc.noWait
			s, err := Open(t.TempDir(), o)
			must(t, err)
			defer func() { must(t, s.Close()) }()
			st := mustBuild(t, s.Builder(), "restore", 0)
			value := bytes.Repeat([]byte("v"), 40)
			for i := range tc.records {
				must(t, st.Set(fmt.Sprintf("key%08d", i*7919%tc.records), value))
				must(t, st.SetOffset(int64(i)))
			}
			must(t, st.MarkRecovered())
			l0 := s.DB().Stats().Levels[0].Tables
			if tc.emptyL0 != (l0 == 0) {
				t.Fatalf("after MarkRecovered L0 holds %d tables (want it empty: %v)\n%s", l0, tc.emptyL0, s.DB().Stats())
			}
			for i := range tc.records {
				got, err := st.Get(fmt.Sprintf("key%08d", i))
				if err != nil || !bytes.Equal(got, value) {
					t.Fatalf("key%08d: %q, %v", i, got, err)
				}
			}
			must(t, st.Close())
		})
	}
}
