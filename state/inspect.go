package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ringstore/ringstore/kv"
)

// StateInfo is one registered state as Inspect reads it.
type StateInfo struct {
	Name string
	ID   uint16
	Kind Kind          // 0 (kind(0)) for a record written before kinds were recorded
	TTL  time.Duration // 0: entries never expire
	// Entries are the state's stored entries (a Map's per user key, a
	// timer service's per timer); Expired those whose expiry has passed
	// (still on disk until a batch meets them). Bytes are their keys and
	// values. KeyGroups is how many key groups hold one of them.
	Entries, Expired uint64
	Bytes            int64
	KeyGroups        int
}

// Inspection is what Inspect reads from a state directory.
type Inspection struct {
	Dir string
	// MaxKeyGroups is the recorded number of key groups (0: not recorded,
	// the state never opened for writing).
	MaxKeyGroups int
	States       []StateInfo // by name
	// Unregistered counts entries under state ids no registry record names.
	Unregistered uint64
	// CheckpointMeta is the metadata of the last checkpoint the state was
	// part of (the operator's input position), when HasCheckpointMeta.
	CheckpointMeta    []byte
	HasCheckpointMeta bool
	// Backend and FallbackReason are the store's I/O backend.
	Backend        string
	FallbackReason string
}

// Entry is one stored state entry, decoded (see the key layout in the
// package doc). Its slices are the caller's.
type Entry struct {
	Group   int
	Key, NS []byte
	// UserKey is a Map entry's user key; for a timer, its time (Timer).
	UserKey []byte
	// ExpiresAt is when the entry expires (zero: never); timers have none.
	ExpiresAt time.Time
	Expired   bool
	// Payload is the value: a Value's or Reducing state's bytes, a Map
	// entry's value, a List's encoded items (Items decodes them).
	Payload []byte
	// Items are a List's items.
	Items [][]byte
	// Timer is a timer's time (KindTimers only).
	Timer int64
}

// Inspector reads a state directory without changing it: the store opened
// read-only (no lock, nothing written, beside a running owner).
type Inspector struct {
	db     *kv.DB
	dir    string
	now    time.Time
	groups int
	names  map[string]registration
}

// OpenInspector opens the state in dir read-only. opts is the store's
// (its IOMode, cache); ReadOnly and DisableWAL are set here. The clock
// that decides what has expired is the wall clock at the call.
func OpenInspector(dir string, opts kv.Options) (*Inspector, error) {
	opts.ReadOnly, opts.DisableWAL = true, true
	db, err := kv.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	in := &Inspector{db: db, dir: dir, now: time.Now(), names: map[string]registration{}}
	b := &Backend{db: db, dir: dir, names: in.names, opts: Options{KV: opts}}
	if err := b.open(); err != nil {
		db.Close()
		return nil, err
	}
	if v, err := db.Get(keyGroupsKey); err == nil && len(v) == 2 {
		in.groups = int(binary.BigEndian.Uint16(v))
	}
	return in, nil
}

// Backend returns the store's I/O backend and, when it fell back from
// io_uring, why.
func (in *Inspector) Backend() (backend, fallbackReason string) {
	st := in.db.Stats()
	return st.Backend.String(), st.FallbackCause
}

// Close closes the store.
func (in *Inspector) Close() error { return in.db.Close() }

// Summary reads every entry once and returns the states with their
// counts, the key-group count and the last checkpoint's metadata.
func (in *Inspector) Summary() (Inspection, error) {
	st := in.db.Stats()
	r := Inspection{Dir: in.dir, MaxKeyGroups: in.groups, Backend: st.Backend.String(), FallbackReason: st.FallbackCause}
	if meta, err := in.db.Get(metaKey); err == nil {
		r.CheckpointMeta, r.HasCheckpointMeta = meta, true
	} else if !errors.Is(err, kv.ErrNotFound) {
		return r, fmt.Errorf("state: %s: the checkpoint meta: %w", in.dir, err)
	}
	byID := map[uint16]*StateInfo{}
	groups := map[uint16]map[int]bool{}
	for name, reg := range in.names {
		r.States = append(r.States, StateInfo{Name: name, ID: reg.id, Kind: reg.kind, TTL: reg.ttl})
	}
	sort.Slice(r.States, func(i, j int) bool { return r.States[i].Name < r.States[j].Name })
	for i := range r.States {
		byID[r.States[i].ID] = &r.States[i]
		groups[r.States[i].ID] = map[int]bool{}
	}
	it := in.db.NewIteratorWith(kv.ReadOptions{NoFillCache: true}, nil, binary.BigEndian.AppendUint16(nil, internalID))
	for it.Next() {
		k, v := it.Key(), it.Value()
		s := byID[binary.BigEndian.Uint16(k)]
		if s == nil {
			r.Unregistered++
			continue
		}
		dk, err := DecodeKey(k)
		if err != nil {
			it.Close()
			return r, fmt.Errorf("state: %s: state %q: %w (key %x)", in.dir, s.Name, err, k)
		}
		s.Entries++
		s.Bytes += int64(len(k) + len(v))
		groups[s.ID][dk.Group] = true
		if s.Kind != KindTimers {
			if exp, _, err := decodeValue(v); err == nil && exp != 0 && exp <= in.now.UnixNano() {
				s.Expired++
			}
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return r, fmt.Errorf("state: %s: %w", in.dir, err)
	}
	for i := range r.States {
		r.States[i].KeyGroups = len(groups[r.States[i].ID])
	}
	return r, nil
}

// ErrNoState: Entries of a name no registry record names.
var ErrNoState = errors.New("state: no such state")

// Entries calls fn with each entry of the state name, in stored order (key
// group, key, namespace, user key), until fn returns false. With key
// non-nil only that key's entries (every namespace; a Map's every user
// key); the key group is computed from the recorded key-group count.
func (in *Inspector) Entries(name string, key []byte, fn func(Entry) bool) error {
	reg, ok := in.names[name]
	if !ok {
		return fmt.Errorf("%w: %q is not registered in %s", ErrNoState, name, in.dir)
	}
	lower := binary.BigEndian.AppendUint16(nil, reg.id)
	upper := binary.BigEndian.AppendUint16(nil, reg.id+1)
	if key != nil {
		if in.groups == 0 {
			return nil // nothing was ever written
		}
		lower = binary.BigEndian.AppendUint16(lower, uint16(KeyGroup(key, in.groups)))
		lower = binary.AppendUvarint(lower, uint64(len(key)))
		lower = append(lower, key...)
		upper = nextPrefix(lower)
	}
	it := in.db.NewIteratorWith(kv.ReadOptions{NoFillCache: true}, lower, upper)
	defer it.Close()
	for it.Next() {
		k, v := it.Key(), it.Value()
		dk, err := DecodeKey(k)
		if err != nil {
			return fmt.Errorf("state: %s: state %q: %w (key %x)", in.dir, name, err, k)
		}
		e := Entry{Group: dk.Group, Key: clone(dk.Key), NS: clone(dk.NS), UserKey: clone(dk.UserKey)}
		if reg.kind == KindTimers {
			if e.Timer, err = timerTS(k); err != nil {
				return fmt.Errorf("state: %s: timers %q: %w", in.dir, name, err)
			}
		} else {
			exp, payload, err := decodeValue(v)
			if err != nil {
				return fmt.Errorf("state: %s: state %q, key %q: %w", in.dir, name, dk.Key, err)
			}
			if exp != 0 {
				e.ExpiresAt, e.Expired = time.Unix(0, exp), exp <= in.now.UnixNano()
			}
			e.Payload = clone(payload)
			if reg.kind == KindList {
				if e.Items, err = decodeList(e.Payload); err != nil {
					return fmt.Errorf("state: %s: list %q, key %q: %w", in.dir, name, dk.Key, err)
				}
			}
		}
		if !fn(e) {
			return nil
		}
	}
	return it.Err()
}

// Lookup returns the registration of name: its kind and TTL.
func (in *Inspector) Lookup(name string) (kind Kind, ttl time.Duration, ok bool) {
	r, ok := in.names[name]
	return r.kind, r.ttl, ok
}

// nextPrefix returns the smallest key after every key with prefix p (nil
// when there is none).
func nextPrefix(p []byte) []byte {
	n := append([]byte(nil), p...)
	for i := len(n) - 1; i >= 0; i-- {
		if n[i] != 0xFF {
			n[i]++
			return n[:i+1]
		}
	}
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
