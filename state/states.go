package state

import (
	"bytes"
	"fmt"
	"time"
)

// desc is what every kind of state has: its id, TTL and backend.
type desc struct {
	b   *Backend
	id  uint16
	ttl int64 // ns, 0: none
}

func (b *Backend) desc(name string, kind Kind, ttl time.Duration) (desc, error) {
	if ttl < 0 {
		return desc{}, fmt.Errorf("state: %q: negative TTL %s", name, ttl)
	}
	id, err := b.register(name, kind, ttl)
	return desc{b: b, id: id, ttl: int64(ttl)}, err
}

func (d desc) key(key, ns []byte) []byte {
	return appendPrefix(make([]byte, 0, prefixLen(key, ns)), d.id, KeyGroup(key, d.b.opts.MaxKeyGroups), key, ns)
}

// ValueState is one value per (key, namespace).
type ValueState struct{ desc }

// MapState is a map of user keys to values per (key, namespace).
type MapState struct{ desc }

// ListState is a list per (key, namespace), appended to.
type ListState struct{ desc }

// ReducingState is a running reduction per (key, namespace): Add folds a
// value into it with the state's reduce function.
type ReducingState struct {
	desc
	reduce func(acc, v []byte) []byte
}

// Value returns the value state called name (the same one every time);
// ttl > 0 makes its entries expire ttl after their last write. A name is
// one state for the life of the backend and its checkpoints: registering
// it again as another kind or with another TTL is ErrIncompatible.
func (b *Backend) Value(name string, ttl time.Duration) (*ValueState, error) {
	d, err := b.desc(name, KindValue, ttl)
	return &ValueState{d}, err
}

// Map returns the map state called name.
func (b *Backend) Map(name string, ttl time.Duration) (*MapState, error) {
	d, err := b.desc(name, KindMap, ttl)
	return &MapState{d}, err
}

// List returns the list state called name.
func (b *Backend) List(name string, ttl time.Duration) (*ListState, error) {
	d, err := b.desc(name, KindList, ttl)
	return &ListState{d}, err
}

// Reducing returns the reducing state called name; reduce(acc, v) returns
// the new accumulator (it may reuse acc's memory, not v's).
func (b *Backend) Reducing(name string, ttl time.Duration, reduce func(acc, v []byte) []byte) (*ReducingState, error) {
	if reduce == nil {
		return nil, fmt.Errorf("state: reducing state %q without a reduce function", name)
	}
	d, err := b.desc(name, KindReducing, ttl)
	return &ReducingState{d, reduce}, err
}

// Want declares that this batch will read (key, ns).
func (s *ValueState) Want(mb *MiniBatch, key, ns []byte) { mb.wantKey(s.key(key, ns)) }

// Get returns the value of (key, ns) as the batch sees it.
func (s *ValueState) Get(mb *MiniBatch, key, ns []byte) ([]byte, bool, error) {
	return mb.get(s.key(key, ns))
}

// Put sets the value of (key, ns).
func (s *ValueState) Put(mb *MiniBatch, key, ns, value []byte) error {
	return mb.put(s.key(key, ns), s.ttl, value)
}

// Clear removes (key, ns).
func (s *ValueState) Clear(mb *MiniBatch, key, ns []byte) error { return mb.del(s.key(key, ns)) }

func (s *MapState) entryKey(key, ns, userKey []byte) []byte {
	return append(s.key(key, ns), userKey...)
}

// Want declares that this batch will read userKey of (key, ns).
func (s *MapState) Want(mb *MiniBatch, key, ns, userKey []byte) {
	mb.wantKey(s.entryKey(key, ns, userKey))
}

// Get returns the value of userKey in the map of (key, ns).
func (s *MapState) Get(mb *MiniBatch, key, ns, userKey []byte) ([]byte, bool, error) {
	return mb.get(s.entryKey(key, ns, userKey))
}

// Put sets userKey in the map of (key, ns).
func (s *MapState) Put(mb *MiniBatch, key, ns, userKey, value []byte) error {
	return mb.put(s.entryKey(key, ns, userKey), s.ttl, value)
}

// Delete removes userKey from the map of (key, ns).
func (s *MapState) Delete(mb *MiniBatch, key, ns, userKey []byte) error {
	return mb.del(s.entryKey(key, ns, userKey))
}

// Iterate calls fn with every entry of the map of (key, ns), in user-key
// order, as the batch sees it (the store's entries with the batch's writes
// over them), until fn returns false. Expired entries are skipped (and
// deleted at Commit). The slices are valid during fn only.
func (s *MapState) Iterate(mb *MiniBatch, key, ns []byte, fn func(userKey, value []byte) bool) error {
	prefix := s.key(key, ns)
	entries, err := mb.scanPrefix(prefix)
	if err != nil {
		return err
	}
	for _, e := range entries {
		expires, payload, err := decodeValue(e[1])
		if err != nil {
			return fmt.Errorf("state: key %x: %w", e[0], err)
		}
		if expires != 0 && expires <= mb.now {
			mb.b.expired.Add(1)
			if err := mb.del(e[0]); err != nil {
				return err
			}
			continue
		}
		if !fn(bytes.TrimPrefix(e[0], prefix), payload) {
			return nil
		}
	}
	return nil
}

// Clear removes every entry of the map of (key, ns).
func (s *MapState) Clear(mb *MiniBatch, key, ns []byte) error {
	prefix := s.key(key, ns)
	entries, err := mb.scanPrefix(prefix)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := mb.del(e[0]); err != nil {
			return err
		}
	}
	return nil
}

// Want declares that this batch will read the list of (key, ns).
func (s *ListState) Want(mb *MiniBatch, key, ns []byte) { mb.wantKey(s.key(key, ns)) }

// Get returns the items of the list of (key, ns), oldest first.
func (s *ListState) Get(mb *MiniBatch, key, ns []byte) ([][]byte, error) {
	payload, ok, err := mb.get(s.key(key, ns))
	if err != nil || !ok {
		return nil, err
	}
	items, err := decodeList(payload)
	if err != nil {
		return nil, fmt.Errorf("state: list of %q: %w", key, err)
	}
	return items, nil
}

// Add appends item to the list of (key, ns).
func (s *ListState) Add(mb *MiniBatch, key, ns, item []byte) error {
	k := s.key(key, ns)
	payload, _, err := mb.get(k)
	if err != nil {
		return err
	}
	return mb.put(k, s.ttl, appendListItem(bytes.Clone(payload), item))
}

// Clear removes the list of (key, ns).
func (s *ListState) Clear(mb *MiniBatch, key, ns []byte) error { return mb.del(s.key(key, ns)) }

// Want declares that this batch will read the reduction of (key, ns).
func (s *ReducingState) Want(mb *MiniBatch, key, ns []byte) { mb.wantKey(s.key(key, ns)) }

// Get returns the reduction of (key, ns).
func (s *ReducingState) Get(mb *MiniBatch, key, ns []byte) ([]byte, bool, error) {
	return mb.get(s.key(key, ns))
}

// Add folds v into the reduction of (key, ns); the first value is the
// reduction.
func (s *ReducingState) Add(mb *MiniBatch, key, ns, v []byte) error {
	k := s.key(key, ns)
	acc, ok, err := mb.get(k)
	if err != nil {
		return err
	}
	next := bytes.Clone(v)
	if ok {
		next = s.reduce(bytes.Clone(acc), v)
	}
	return mb.put(k, s.ttl, next)
}

// Clear removes the reduction of (key, ns).
func (s *ReducingState) Clear(mb *MiniBatch, key, ns []byte) error { return mb.del(s.key(key, ns)) }
