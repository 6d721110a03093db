package state

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

func dueStrings(t *testing.T, s *TimerService, mb *MiniBatch, now int64) []string {
	t.Helper()
	due, err := s.Due(mb, now)
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
	mb := b.NewMiniBatch()
	for _, c := range []struct {
		ts      int64
		key, ns string
	}{{30, "b", ""}, {10, "z", "w1"}, {30, "a", ""}, {30, "a", ""}, {20, "gone", ""}, {50, "late", ""}, {-5, "neg", ""}} {
		if err := s.Set(mb, c.ts, []byte(c.key), []byte(c.ns)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(mb, 20, []byte("gone"), nil); err != nil {
		t.Fatal(err)
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 5 {
		t.Errorf("%d timers set, want 5", s.Len())
	}
	if err := b.Checkpoint(filepath.Join(root, "ck"), nil); err != nil {
		t.Fatal(err)
	}
	got := dueStrings(t, s, mb, 40)
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"-5 neg/", "10 z/w1"}; !slices.Equal(got[:2], want) || len(got) != 4 {
		t.Errorf("due at 40: %v, want %v then the two at 30", got, want)
	}
	if again := dueStrings(t, s, mb, 40); len(again) != 0 || s.Len() != 1 {
		t.Errorf("fired again: %v; %d left", again, s.Len())
	}
	// The store has what the service has: reopening the service finds the
	// one left; the checkpoint, the five set before it.
	s2, err := b.Timers("event2")
	if err != nil || s2.Len() != 0 {
		t.Fatalf("another service: %d timers, %v", s2.Len(), err)
	}
	again, err := b.Timers("event")
	if err != nil || again.Len() != 1 {
		t.Errorf("the service read anew: %d timers, %v; want the one not fired", again.Len(), err)
	}
	r, _, err := Restore(filepath.Join(root, "ck"), filepath.Join(root, "restored"), Options{KV: kv.Options{Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rs, err := r.Timers("event")
	if err != nil || rs.Len() != 5 {
		t.Fatalf("restored: %d timers, %v; want 5", rs.Len(), err)
	}
	if got := dueStrings(t, rs, r.NewMiniBatch(), 100); len(got) != 5 || got[4] != "50 late/" {
		t.Errorf("restored, due at 100: %v", got)
	}
	if _, err := r.Value("event", 0); err == nil {
		t.Error("a timer service's name registered again as a value state")
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
			tm.Set(mb, int64(k), key, nil)
		}
		if err := mb.Commit(); err != nil {
			t.Fatal(err)
		}
		ck := filepath.Join(root, fmt.Sprint("ck", i))
		if err := b.Checkpoint(ck, []byte(fmt.Sprint("meta", i))); err != nil {
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
