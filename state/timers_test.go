package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

func dueStrings(t *testing.T, s *TimerService, now int64) []string {
	t.Helper()
	due, err := s.Due(now)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range due {
		out = append(out, fmt.Sprintf("%d %s/%s", d.TS, d.Key, d.NS))
	}
	return out
}

// TestTimerService: timers fire once, in time order, not when deleted,
// negative times included; they are state: a checkpoint holds the ones set
// and not fired, and a restore has them; fired ones are gone from the
// store.
func TestTimerService(t *testing.T) {
	root := testdir.Direct(t)
	b := openTest(t, filepath.Join(root, "live"), ioengine.URing, nil)
	defer b.Close()
	s, err := b.Timers("event")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ts      int64
		key, ns string
	}{{30, "b", ""}, {10, "z", "w1"}, {30, "a", ""}, {30, "a", ""}, {20, "gone", ""}, {50, "late", ""}, {-5, "neg", ""}} {
		if err := s.Set(c.ts, []byte(c.key), []byte(c.ns)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(20, []byte("gone"), nil); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 5 {
		t.Errorf("%d timers set, want 5", s.Len())
	}
	if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck1"), nil); err != nil {
		t.Fatal(err)
	}
	got := dueStrings(t, s, 40)
	if want := []string{"-5 neg/", "10 z/w1"}; len(got) != 4 || !slices.Equal(got[:2], want) {
		t.Errorf("due at 40: %v, want %v then the two at 30", got, want)
	}
	if again := dueStrings(t, s, 40); len(again) != 0 || s.Len() != 1 {
		t.Errorf("fired again: %v; %d left", again, s.Len())
	}
	if same, err := b.Timers("event"); err != nil || same != s {
		t.Errorf("the name again: %p, %v; want the same service", same, err)
	}
	if other, err := b.Timers("event2"); err != nil || other.Len() != 0 {
		t.Fatalf("another service: %d timers, %v", other.Len(), err)
	}
	if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck2"), nil); err != nil {
		t.Fatal(err)
	}
	// Each checkpoint has the timers set when it was taken.
	for _, c := range []struct {
		ck   string
		want []string
	}{{"ck1", []string{"-5 neg/", "10 z/w1", "30 a/", "30 b/", "50 late/"}}, {"ck2", []string{"50 late/"}}} {
		r, _, err := Restore(filepath.Join(root, c.ck), filepath.Join(root, "r-"+c.ck), Options{KV: kv.Options{Logf: t.Logf}})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := r.Timers("event")
		if err != nil {
			t.Fatal(err)
		}
		if got := dueStrings(t, rs, 100); !slices.Equal(got, c.want) {
			t.Errorf("%s: due at 100 %v, want %v", c.ck, got, c.want)
		}
		if _, err := r.Value("event", 0); err == nil {
			t.Error("a timer service's name registered again as a value state")
		}
		r.Close()
	}
	if err := s.Set(1, []byte("k"), nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := s.Set(2, []byte("k"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Set after Close: %v, want ErrClosed", err)
	}
}

// TestTimerMovedManyTimes: a timer moved on with every event (set at the
// next time, the last deleted) reaches the store once, where it ends, at
// the checkpoint; a stored one deleted, set again and deleted again stays
// deleted; a restore has exactly the timers set.
func TestTimerMovedManyTimes(t *testing.T) {
	root := testdir.Direct(t)
	b := openTest(t, filepath.Join(root, "live"), ioengine.URing, nil)
	defer b.Close()
	s, _ := b.Timers("t")
	for i := range int64(1000) {
		if i > 0 {
			if err := s.Delete(i-1, []byte("bidder"), nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Set(i, []byte("bidder"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.dirty) != 1 || len(s.h) > 2*s.Len()+1024 {
		t.Errorf("%d changes pending and a heap of %d for one timer", len(s.dirty), len(s.h))
	}
	if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck1"), nil); err != nil {
		t.Fatal(err)
	}
	s.Delete(999, []byte("bidder"), nil)
	s.Set(999, []byte("bidder"), nil)
	s.Delete(999, []byte("bidder"), nil)
	s.Set(5000, []byte("other"), nil)
	if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck2"), nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ck   string
		want []string
	}{{"ck1", []string{"999 bidder/"}}, {"ck2", []string{"5000 other/"}}} {
		r, _, err := Restore(filepath.Join(root, c.ck), filepath.Join(root, "r-"+c.ck), Options{KV: kv.Options{Logf: t.Logf}})
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := r.Timers("t")
		if got := dueStrings(t, rs, 1<<40); !slices.Equal(got, c.want) {
			t.Errorf("%s: restored timers %v, want %v", c.ck, got, c.want)
		}
		r.Close()
	}
}

// TestRestoreKeyGroups: state of four subtasks restored into two and into
// three: each new subtask holds exactly the entries and timers of its key
// groups, from every state, whichever ids the old subtasks gave the names.
func TestRestoreKeyGroups(t *testing.T) {
	root := testdir.Direct(t)
	const groups, keys = 16, 400
	opts := Options{MaxKeyGroups: groups, KV: kv.Options{Logf: t.Logf}}
	var cks []string
	for i := range 4 {
		b, err := Open(filepath.Join(root, fmt.Sprint("old", i)), opts)
		if err != nil {
			t.Fatal(err)
		}
		// Register in a different order per subtask: different ids.
		names := []string{"a", "b"}
		if i%2 == 1 {
			names = []string{"b", "a"}
		}
		vs := map[string]*ValueState{}
		for _, n := range names {
			vs[n], _ = b.Value(n, 0)
		}
		tm, _ := b.Timers("t")
		mb := b.NewMiniBatch()
		r := RangeForSubtask(i, 4, groups)
		for k := range keys {
			key := []byte(fmt.Sprint("k", k))
			if !r.Contains(KeyGroup(key, groups)) {
				continue
			}
			vs["a"].Put(mb, key, nil, []byte("A"+string(key)))
			vs["b"].Put(mb, key, []byte("ns"), []byte("B"+string(key)))
			tm.Set(int64(k), key, nil)
		}
		if err := mb.Commit(); err != nil {
			t.Fatal(err)
		}
		ck := filepath.Join(root, fmt.Sprint("ck", i))
		if err := b.Checkpoint(context.Background(), ck, []byte(fmt.Sprint("meta", i))); err != nil {
			t.Fatal(err)
		}
		b.Close()
		cks = append(cks, ck)
	}
	for _, p := range []int{2, 3} {
		seen := 0
		for j := range p {
			r := RangeForSubtask(j, p, groups)
			var src []string
			for i, ck := range cks {
				if o := RangeForSubtask(i, 4, groups); o.Last >= r.First && o.First <= r.Last {
					src = append(src, ck)
				}
			}
			b, metas, err := RestoreKeyGroups(src, filepath.Join(root, fmt.Sprintf("new%d-%d", p, j)), r, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(metas) != len(src) {
				t.Errorf("%d metas of %d sources", len(metas), len(src))
			}
			a, _ := b.Value("a", 0)
			bb, _ := b.Value("b", 0)
			tm, _ := b.Timers("t")
			mb := b.NewMiniBatch()
			n := 0
			for k := range keys {
				key := []byte(fmt.Sprint("k", k))
				in := r.Contains(KeyGroup(key, groups))
				va, okA, _ := a.Get(mb, key, nil)
				vb, okB, _ := bb.Get(mb, key, []byte("ns"))
				if okA != in || okB != in || in && (string(va) != "A"+string(key) || string(vb) != "B"+string(key)) {
					t.Errorf("%d→%d, subtask %d: key %s (group %d, in range %v): %q %v, %q %v", 4, p, j, key, KeyGroup(key, groups), in, va, okA, vb, okB)
				}
				if in {
					n++
				}
			}
			if tm.Len() != n {
				t.Errorf("%d→%d, subtask %d: %d timers for %d keys", 4, p, j, tm.Len(), n)
			}
			seen += n
			b.Close()
		}
		if seen != keys {
			t.Errorf("4→%d: %d keys restored, want %d", p, seen, keys)
		}
	}
}

// TestRestoreKeyGroupsRefuses: no sources, a directory that is not a whole
// checkpoint, sources of another key-group count, and a range outside the
// key groups are errors, and leave no state behind to open.
func TestRestoreKeyGroupsRefuses(t *testing.T) {
	root := testdir.Direct(t)
	mk := func(name string, groups int) string {
		b, err := Open(filepath.Join(root, name), Options{MaxKeyGroups: groups, KV: kv.Options{Logf: t.Logf}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ck := filepath.Join(root, name+"-ck")
		if err := b.Checkpoint(context.Background(), ck, nil); err != nil {
			t.Fatal(err)
		}
		return ck
	}
	a16, b32 := mk("a", 16), mk("b", 32)
	opts := Options{KV: kv.Options{Logf: t.Logf}}
	for _, c := range []struct {
		what    string
		sources []string
		r       KeyGroupRange
		is      error
	}{
		{"no sources", nil, KeyGroupRange{0, 3}, nil},
		{"not a checkpoint", []string{t.TempDir()}, KeyGroupRange{0, 3}, nil},
		{"16 and 32 key groups", []string{a16, b32}, KeyGroupRange{0, 3}, ErrIncompatible},
		{"a range past the last group", []string{a16}, KeyGroupRange{8, 16}, nil},
	} {
		dir := filepath.Join(root, "new-"+c.what)
		if _, _, err := RestoreKeyGroups(c.sources, dir, c.r, opts); err == nil || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want an error (%v)", c.what, err, c.is)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: %s left behind: %v", c.what, dir, err)
		}
	}
}
