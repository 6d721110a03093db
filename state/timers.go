package state

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ringstore/ringstore/kv"
)

// TimerService is a set of timers kept as state: a timer (ts, key, ns)
// is due once the service's clock — the watermark for event time, the
// wall clock for processing time: one service per time domain — reaches
// ts. Timers are entries of the backend like any state's, in the key
// group of their key:
//
//	key in kv:  state id | key group | len | key | len | ns | ts (8 B, big endian, sign bit flipped)
//	value:      the value header, no payload
//
// so they are checkpointed incrementally with the rest of the state and
// move with their key groups in a rescale (RestoreKeyGroups). The service
// holds them in memory, in a heap by (ts, stored key), to find the due
// ones without a read, and writes what changed since the last checkpoint
// into the store when the backend takes the next one (and at Close): the
// store has no log, so state is durable at a checkpoint in any case, and
// a timer moved on with every event (a session's end) costs a map update
// per event and one write per checkpoint. Backend.Timers fills the
// service from the store, so a restored backend has its timers. Setting a
// timer that is set does nothing; Delete drops one not yet due.
//
// A TimerService belongs to one goroutine at a time, which is also the
// one that calls the backend's Checkpoint and Close.
type TimerService struct {
	desc
	set map[string]struct{} // stored keys of the timers set
	h   timerHeap           // may hold deleted timers, until they reach the top or outnumber the live ones
	// dirty is what the store does not have yet: a timer set that it does
	// not hold (true), or one deleted that it does (false).
	dirty   map[string]bool
	scratch []byte // the stored key being looked up
}

// Timer is a timer of a TimerService.
type Timer struct {
	TS      int64
	Key, NS []byte
}

type heapTimer struct {
	ts     int64
	stored string
}

type timerHeap []heapTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].ts < h[j].ts || h[i].ts == h[j].ts && h[i].stored < h[j].stored
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(heapTimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Timers returns the timer service called name, holding the timers the
// store has (a restored backend's included). A name has one service: a
// second call returns the first.
func (b *Backend) Timers(name string) (*TimerService, error) {
	d, err := b.desc(name, KindTimers, 0)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.timers {
		if s.id == d.id {
			return s, nil
		}
	}
	s := &TimerService{desc: d, set: map[string]struct{}{}, dirty: map[string]bool{}}
	lower := binary.BigEndian.AppendUint16(nil, d.id)
	it := b.db.NewIterator(lower, binary.BigEndian.AppendUint16(nil, d.id+1))
	for it.Next() {
		ts, err := timerTS(it.Key())
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("state: timers %q: %w", name, err)
		}
		k := string(it.Key())
		s.set[k] = struct{}{}
		s.h = append(s.h, heapTimer{ts, k})
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, fmt.Errorf("state: timers %q: %w", name, b.wrapClosed(err))
	}
	heap.Init(&s.h)
	b.timers = append(b.timers, s)
	return s, nil
}

const signBit = 1 << 63

// storedKey returns the stored key of timer (ts, key, ns) in the
// service's scratch buffer: valid until the next call.
func (s *TimerService) storedKey(ts int64, key, ns []byte) []byte {
	s.scratch = appendPrefix(s.scratch[:0], s.id, KeyGroup(key, s.b.opts.MaxKeyGroups), key, ns)
	s.scratch = binary.BigEndian.AppendUint64(s.scratch, uint64(ts)^signBit)
	return s.scratch
}

// timerTS reads the time of a stored timer key, checking its layout.
func timerTS(stored []byte) (int64, error) {
	k, err := DecodeKey(stored)
	if err != nil {
		return 0, err
	}
	if len(k.UserKey) != 8 {
		return 0, fmt.Errorf("%w: a timer key %x with %d bytes of time, want 8", ErrBadKey, stored, len(k.UserKey))
	}
	return int64(binary.BigEndian.Uint64(k.UserKey) ^ signBit), nil
}

// Set sets a timer at ts for (key, ns).
func (s *TimerService) Set(ts int64, key, ns []byte) error {
	if s.b.closed.Load() {
		return ErrClosed
	}
	k := s.storedKey(ts, key, ns)
	if _, ok := s.set[string(k)]; ok {
		return nil
	}
	ks := string(k)
	if stored, ok := s.dirty[ks]; ok && !stored {
		delete(s.dirty, ks) // deleted and set again: as the store has it
	} else {
		s.dirty[ks] = true
	}
	s.set[ks] = struct{}{}
	heap.Push(&s.h, heapTimer{ts, ks})
	return nil
}

// remove drops the timer k, which is set.
func (s *TimerService) remove(k string) {
	if _, ok := s.dirty[k]; ok {
		delete(s.dirty, k) // set since the last flush: the store never had it
	} else {
		s.dirty[k] = false
	}
	delete(s.set, k)
	if len(s.h) > 2*len(s.set)+1024 {
		s.compact()
	}
}

// compact rebuilds the heap from the timers set, dropping the deleted ones
// it held: a timer moved on with every event leaves one per event.
func (s *TimerService) compact() {
	live := s.h[:0]
	for _, t := range s.h {
		if _, ok := s.set[t.stored]; ok {
			live = append(live, t)
		}
	}
	clear(s.h[len(live):])
	s.h = live
	heap.Init(&s.h)
}

// Delete drops the timer at ts for (key, ns) if it is set.
func (s *TimerService) Delete(ts int64, key, ns []byte) error {
	if s.b.closed.Load() {
		return ErrClosed
	}
	k := s.storedKey(ts, key, ns)
	if _, ok := s.set[string(k)]; ok {
		s.remove(string(k))
	}
	return nil
}

// Due removes the timers at or before now and returns them in (ts, key
// group, key, ns) order. The slices of a Timer are its own.
func (s *TimerService) Due(now int64) ([]Timer, error) {
	if s.b.closed.Load() {
		return nil, ErrClosed
	}
	var out []Timer
	for len(s.h) > 0 && s.h[0].ts <= now {
		t := heap.Pop(&s.h).(heapTimer)
		if _, ok := s.set[t.stored]; !ok {
			continue
		}
		s.remove(t.stored)
		k, err := DecodeKey([]byte(t.stored))
		if err != nil {
			return out, err
		}
		out = append(out, Timer{TS: t.ts, Key: bytes.Clone(k.Key), NS: bytes.Clone(k.NS)})
	}
	return out, nil
}

// Len is the number of timers set.
func (s *TimerService) Len() int { return len(s.set) }

// timerValue is every timer's stored value: the value header alone.
var timerValue = encodeValue(0, nil)

// flush writes what changed since the last flush into the store.
func (s *TimerService) flush() error {
	if len(s.dirty) == 0 {
		return nil
	}
	var batch kv.Batch
	for k, set := range s.dirty {
		if set {
			batch.Put([]byte(k), timerValue)
		} else {
			batch.Delete([]byte(k))
		}
	}
	if err := s.b.db.Write(&batch); err != nil {
		return s.b.wrapClosed(err)
	}
	clear(s.dirty)
	return nil
}
