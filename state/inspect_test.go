package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// TestInspect: the inspector reads every registered state with its kind,
// TTL, entries and key groups, the key-group count and the checkpoint's
// meta, and one key's entries of each kind, without writing anything and
// beside the backend that has the state open.
func TestInspect(t *testing.T) {
	now := time.Now().Add(-time.Minute) // what has expired is decided by the wall clock
	clock := func() time.Time { return now }
	dir := filepath.Join(testdir.Direct(t), "state")
	b, err := Open(dir, Options{MaxKeyGroups: 16, Clock: clock, KV: kv.Options{IOMode: ioengine.Syscall, Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := b.Value("counts", 0)
	bids, _ := b.Map("bids", time.Hour)
	names, _ := b.List("names", 0)
	short, _ := b.Value("short", time.Millisecond)
	timers, err := b.Timers("fire")
	if err != nil {
		t.Fatal(err)
	}
	mb := b.NewMiniBatch()
	for i := range 10 {
		k := fmt.Appendf(nil, "k%d", i)
		counts.Put(mb, k, nil, fmt.Appendf(nil, "%d", i))
		bids.Put(mb, k, []byte("w1"), []byte("u1"), []byte("one"))
		bids.Put(mb, k, []byte("w1"), []byte("u2"), []byte("two"))
	}
	names.Add(mb, []byte("k1"), nil, []byte("alice"))
	names.Add(mb, []byte("k1"), nil, []byte("bob"))
	short.Put(mb, []byte("k1"), nil, []byte("gone soon"))
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := timers.Set(42, []byte("k1"), []byte("w1")); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(filepath.Dir(dir), "ck1")
	if err := b.Checkpoint(context.Background(), ck, []byte("offset=77")); err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	for _, d := range []string{dir, ck} {
		in, err := OpenInspector(d, kv.Options{IOMode: ioengine.Syscall})
		if err != nil {
			t.Fatalf("%s beside its open backend: %v", d, err)
		}
		sum, err := in.Summary()
		if err != nil {
			t.Fatal(err)
		}
		if sum.MaxKeyGroups != 16 || !sum.HasCheckpointMeta || string(sum.CheckpointMeta) != "offset=77" || sum.Backend == "" {
			t.Errorf("%s: summary %+v", d, sum)
		}
		want := map[string]StateInfo{
			"bids": {Kind: KindMap, TTL: time.Hour, Entries: 20}, "counts": {Kind: KindValue, Entries: 10},
			"fire": {Kind: KindTimers, Entries: 1, KeyGroups: 1}, "names": {Kind: KindList, Entries: 1, KeyGroups: 1},
			"short": {Kind: KindValue, TTL: time.Millisecond, Entries: 1, Expired: 1, KeyGroups: 1},
		}
		if len(sum.States) != len(want) {
			t.Fatalf("%s: states %+v", d, sum.States)
		}
		for _, s := range sum.States {
			w := want[s.Name]
			if s.Kind != w.Kind || s.TTL != w.TTL || s.Entries != w.Entries || s.Expired != w.Expired || s.Bytes <= 0 ||
				w.KeyGroups != 0 && s.KeyGroups != w.KeyGroups || s.KeyGroups < 1 || s.KeyGroups > 10 {
				t.Errorf("%s: %+v, want %+v", d, s, w)
			}
		}
		var got []Entry
		collect := func(e Entry) bool { got = append(got, e); return true }
		if err := in.Entries("bids", []byte("k3"), collect); err != nil || len(got) != 2 ||
			string(got[0].UserKey) != "u1" || string(got[1].Payload) != "two" || string(got[0].NS) != "w1" || got[0].ExpiresAt.IsZero() || got[0].Group != KeyGroup([]byte("k3"), 16) {
			t.Errorf("bids k3: %+v, %v", got, err)
		}
		got = nil
		if err := in.Entries("names", []byte("k1"), collect); err != nil || len(got) != 1 || len(got[0].Items) != 2 || string(got[0].Items[1]) != "bob" {
			t.Errorf("names k1: %+v, %v", got, err)
		}
		got = nil
		if err := in.Entries("fire", nil, collect); err != nil || len(got) != 1 || got[0].Timer != 42 || string(got[0].Key) != "k1" {
			t.Errorf("fire: %+v, %v", got, err)
		}
		got = nil
		if err := in.Entries("counts", []byte("k10"), collect); err != nil || len(got) != 0 {
			t.Errorf("counts of an absent key: %+v, %v", got, err)
		}
		if err := in.Entries("nope", nil, collect); !errors.Is(err, ErrNoState) {
			t.Errorf("an unregistered name: %v", err)
		}
		if b, _ := in.Backend(); b != "syscall" {
			t.Errorf("backend %q, opened with the syscall backend", b)
		}
		if err := in.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(ck, "LOCK")); err == nil {
		t.Errorf("the inspector left a lock file in the checkpoint")
	}
}
