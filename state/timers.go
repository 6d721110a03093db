package state

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
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
// so they are written with the mini-batch that sets them, checkpointed
// incrementally with the rest of the state, and moved with their key
// groups by a rescale (RestoreKeyGroups). The service also holds them in
// memory, in a heap by (ts, stored key), to find the due ones without a
// read; Backend.Timers fills it from the store, so a restored backend
// has its timers. Setting a timer that is set does nothing; Delete drops
// one not yet due.
//
// A TimerService, like a MiniBatch, belongs to one goroutine at a time,
// and the batches that change it must be committed (a batch dropped with
// Reset leaves the heap ahead of the store).
type TimerService struct {
	desc
	set map[string]struct{} // stored keys of the timers set
	h   timerHeap           // may hold deleted timers until they reach the top
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
// store has (a restored backend's included). Call it once per name: each
// call reads the timers anew.
func (b *Backend) Timers(name string) (*TimerService, error) {
	d, err := b.desc(name, KindTimers, 0)
	if err != nil {
		return nil, err
	}
	s := &TimerService{desc: d, set: map[string]struct{}{}}
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
	return s, nil
}

const signBit = 1 << 63

func (s *TimerService) storedKey(ts int64, key, ns []byte) []byte {
	return binary.BigEndian.AppendUint64(s.key(key, ns), uint64(ts)^signBit)
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

// Set sets a timer at ts for (key, ns), written with mb.
func (s *TimerService) Set(mb *MiniBatch, ts int64, key, ns []byte) error {
	k := s.storedKey(ts, key, ns)
	if _, ok := s.set[string(k)]; ok {
		return nil
	}
	if err := mb.put(k, 0, nil); err != nil {
		return err
	}
	s.set[string(k)] = struct{}{}
	heap.Push(&s.h, heapTimer{ts, string(k)})
	return nil
}

// Delete drops the timer at ts for (key, ns) if it is set, with mb.
func (s *TimerService) Delete(mb *MiniBatch, ts int64, key, ns []byte) error {
	k := s.storedKey(ts, key, ns)
	if _, ok := s.set[string(k)]; !ok {
		return nil
	}
	if err := mb.del(k); err != nil {
		return err
	}
	delete(s.set, string(k))
	return nil
}

// Due removes the timers at or before now and returns them in (ts, key
// group, key, ns) order; their deletes are written with mb. The slices
// of a Timer are its own.
func (s *TimerService) Due(mb *MiniBatch, now int64) ([]Timer, error) {
	var out []Timer
	for len(s.h) > 0 && s.h[0].ts <= now {
		t := heap.Pop(&s.h).(heapTimer)
		if _, ok := s.set[t.stored]; !ok {
			continue
		}
		if err := mb.del([]byte(t.stored)); err != nil {
			heap.Push(&s.h, t)
			return out, err
		}
		delete(s.set, t.stored)
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
