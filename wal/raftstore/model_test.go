package raftstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

// TestLogStoreModel runs random sequences of what raft does to a log —
// appends, front compaction, suffix deletion, deleting everything and
// restarting at a later index, reopening — against an in-memory model,
// checking the whole log after each reopen and its bounds after every step.
func TestLogStoreModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runModel(t, seed, 250)
		})
	}
}

type logModel struct {
	logs  map[uint64]*raft.Log
	first uint64 // first index held; with last < first the log is empty
	last  uint64
	// floor is the lowest index an append to the empty log may have: the
	// wal's FirstSeq, which only TruncateFront moves (forward).
	floor uint64
}

func (m *logModel) empty() bool { return m.last < m.first }

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	dir := newDir(t)
	s := openStore(t, dir)
	m := &logModel{logs: map[uint64]*raft.Log{}, first: 1, last: 0, floor: 1}
	term := uint64(1)
	mk := func(i uint64) *raft.Log {
		size := rng.IntN(64)
		if rng.IntN(20) == 0 {
			size = 4000 + rng.IntN(8000) // rotate the 64 KiB segments sooner
		}
		data := bytes.Repeat([]byte{byte(i)}, size)
		return &raft.Log{Index: i, Term: term, Type: raft.LogType(rng.IntN(6)), Data: data}
	}
	checkAll := func(step int, what string) {
		t.Helper()
		first, last := m.first, m.last
		if m.empty() {
			first, last = 0, 0
		}
		gf, err1 := s.FirstIndex()
		gl, err2 := s.LastIndex()
		if err1 != nil || err2 != nil || gf != first || gl != last {
			t.Fatalf("step %d (%s): FirstIndex, LastIndex = %d, %d (%v, %v); model %d, %d", step, what, gf, gl, err1, err2, first, last)
		}
	}
	checkLogs := func(step int, what string, every bool) {
		t.Helper()
		if m.empty() {
			return
		}
		for i := m.first; i <= m.last; i++ {
			if !every && i != m.first && i != m.last && rng.IntN(16) != 0 {
				continue
			}
			var got raft.Log
			if err := s.GetLog(i, &got); err != nil {
				t.Fatalf("step %d (%s): GetLog(%d): %v", step, what, i, err)
			}
			if !logsEqual(&got, m.logs[i]) {
				t.Fatalf("step %d (%s): GetLog(%d) = term %d type %d %d bytes; model term %d type %d %d bytes",
					step, what, i, got.Term, got.Type, len(got.Data), m.logs[i].Term, m.logs[i].Type, len(m.logs[i].Data))
			}
		}
		var l raft.Log
		if err := s.GetLog(m.last+1, &l); err != raft.ErrLogNotFound {
			t.Fatalf("step %d (%s): GetLog(%d) past the end: %v", step, what, m.last+1, err)
		}
		if m.first > 1 {
			if err := s.GetLog(m.first-1, &l); err != raft.ErrLogNotFound {
				t.Fatalf("step %d (%s): GetLog(%d) before the start: %v", step, what, m.first-1, err)
			}
		}
	}
	for step := range steps {
		var what string
		switch r := rng.IntN(100); {
		case r < 45: // append
			start := m.last + 1
			if m.empty() {
				start = m.floor
				if rng.IntN(2) == 0 {
					start += uint64(rng.IntN(300)) // after a snapshot install
				}
			}
			n := 1 + rng.IntN(40)
			what = fmt.Sprintf("StoreLogs(%d..%d)", start, start+uint64(n)-1)
			var ls []*raft.Log
			for i := range uint64(n) {
				ls = append(ls, mk(start+i))
			}
			if err := s.StoreLogs(ls); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			if m.empty() {
				m.first, m.floor = start, start
			}
			for _, l := range ls {
				m.logs[l.Index] = l
			}
			m.last = start + uint64(n) - 1
		case r < 60 && !m.empty(): // compaction from the front
			max := m.first + uint64(rng.IntN(int(m.last-m.first+1)))
			what = fmt.Sprintf("DeleteRange(%d, %d) front", m.first, max)
			if err := s.DeleteRange(m.first, max); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			if max == m.last { // everything: cut from the back, the floor stays
				m.last = m.first - 1
				m.floor = m.first
			} else {
				m.first, m.floor = max+1, max+1
			}
		case r < 75 && !m.empty(): // a conflicting suffix
			min := m.first + uint64(rng.IntN(int(m.last-m.first+1)))
			what = fmt.Sprintf("DeleteRange(%d, %d) back", min, m.last)
			if err := s.DeleteRange(min, m.last); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			if min == m.first {
				m.floor = m.first
			}
			m.last = min - 1
			term++
		case r < 80 && !m.empty(): // a range in the middle is refused
			if m.last-m.first < 2 {
				continue
			}
			what = fmt.Sprintf("DeleteRange(%d, %d) middle", m.first+1, m.last-1)
			if err := s.DeleteRange(m.first+1, m.last-1); err == nil {
				t.Fatalf("step %d: %s succeeded", step, what)
			}
		case r < 85: // a gap is refused
			bad := m.last + 2
			if m.empty() {
				if m.floor <= 1 {
					continue
				}
				bad = m.floor - 1
			}
			what = fmt.Sprintf("StoreLog(%d) out of order", bad)
			if err := s.StoreLog(mk(bad)); err == nil {
				t.Fatalf("step %d: %s succeeded", step, what)
			}
		default:
			what = "reopen"
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir)
			checkAll(step, what)
			checkLogs(step, what, true)
			continue
		}
		checkAll(step, what)
		checkLogs(step, what, false)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	checkAll(steps, "final reopen")
	checkLogs(steps, "final reopen", true)
}
