package state

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ringstore/ringstore"
)

// Codec turns values of T into bytes and back; Decode reports bytes that
// are not a T. The states return Decode's error marked as corruption
// (ringstore.IsCorrupt): the bytes were stored.
type Codec[T any] interface {
	Append(dst []byte, v T) []byte
	Decode(b []byte) (T, error)
}

// Lookup is one (key, namespace) of one state in a mini-batch: its stored
// key, encoded and placed in its key group once, by Want, and used by the
// Get, Put and Clear of the same entry in the same batch. A Lookup of one
// state given to another is an error.
type Lookup struct {
	id uint16
	k  []byte
}

// Value is a value state of T: one T per (key, namespace).
type Value[T any] struct {
	s     *ValueState
	codec Codec[T]
}

// NewValue returns the value state called name with values of T, as
// Backend.Value does.
func NewValue[T any](b *Backend, name string, ttl time.Duration, codec Codec[T]) (*Value[T], error) {
	if codec == nil {
		return nil, fmt.Errorf("state: value state %q without a codec", name)
	}
	s, err := b.Value(name, ttl)
	if err != nil {
		return nil, err
	}
	return &Value[T]{s, codec}, nil
}

// Want declares that this batch will read (key, ns) and returns its Lookup.
func (v *Value[T]) Want(mb *MiniBatch, key, ns []byte) Lookup {
	l := Lookup{v.s.id, v.s.key(key, ns)}
	mb.wantKey(l.k)
	return l
}

// At returns the Lookup of (key, ns) without declaring a read: for an
// entry the batch only writes.
func (v *Value[T]) At(key, ns []byte) Lookup { return Lookup{v.s.id, v.s.key(key, ns)} }

func (d desc) check(l Lookup) error {
	if l.id != d.id || l.k == nil {
		return fmt.Errorf("state: a lookup of state id %d used with state id %d", l.id, d.id)
	}
	return nil
}

// Get returns the value of l's entry as the batch sees it.
func (v *Value[T]) Get(mb *MiniBatch, l Lookup) (T, bool, error) {
	var zero T
	if err := v.s.check(l); err != nil {
		return zero, false, err
	}
	b, ok, err := mb.get(l.k)
	if err != nil || !ok {
		return zero, false, err
	}
	t, err := v.codec.Decode(b)
	if err != nil {
		return zero, false, fmt.Errorf("state: key %x: %w", l.k, ringstore.MarkCorrupt(err))
	}
	return t, true, nil
}

// Put sets the value of l's entry.
func (v *Value[T]) Put(mb *MiniBatch, l Lookup, val T) error {
	if err := v.s.check(l); err != nil {
		return err
	}
	return mb.put(l.k, v.s.ttl, v.codec.Append(nil, val))
}

// Clear removes l's entry.
func (v *Value[T]) Clear(mb *MiniBatch, l Lookup) error {
	if err := v.s.check(l); err != nil {
		return err
	}
	return mb.del(l.k)
}

// List is a list state of T.
type List[T any] struct {
	s     *ListState
	codec Codec[T]
}

// NewList returns the list state called name with items of T, as
// Backend.List does.
func NewList[T any](b *Backend, name string, ttl time.Duration, codec Codec[T]) (*List[T], error) {
	if codec == nil {
		return nil, fmt.Errorf("state: list state %q without a codec", name)
	}
	s, err := b.List(name, ttl)
	if err != nil {
		return nil, err
	}
	return &List[T]{s, codec}, nil
}

// Want declares that this batch will read the list of (key, ns) and
// returns its Lookup.
func (s *List[T]) Want(mb *MiniBatch, key, ns []byte) Lookup {
	l := Lookup{s.s.id, s.s.key(key, ns)}
	mb.wantKey(l.k)
	return l
}

// Get returns the items of l's list, oldest first.
func (s *List[T]) Get(mb *MiniBatch, l Lookup) ([]T, error) {
	if err := s.s.check(l); err != nil {
		return nil, err
	}
	payload, ok, err := mb.get(l.k)
	if err != nil || !ok {
		return nil, err
	}
	raw, err := decodeList(payload)
	if err != nil {
		return nil, fmt.Errorf("state: key %x: %w", l.k, err)
	}
	items := make([]T, len(raw))
	for i, b := range raw {
		if items[i], err = s.codec.Decode(b); err != nil {
			return nil, fmt.Errorf("state: key %x, item %d: %w", l.k, i, ringstore.MarkCorrupt(err))
		}
	}
	return items, nil
}

// Add appends item to l's list.
func (s *List[T]) Add(mb *MiniBatch, l Lookup, item T) error {
	if err := s.s.check(l); err != nil {
		return err
	}
	payload, _, err := mb.get(l.k)
	if err != nil {
		return err
	}
	next := make([]byte, 0, len(payload)+16)
	next = appendListItem(append(next, payload...), s.codec.Append(nil, item))
	return mb.put(l.k, s.s.ttl, next)
}

// Clear removes l's list.
func (s *List[T]) Clear(mb *MiniBatch, l Lookup) error {
	if err := s.s.check(l); err != nil {
		return err
	}
	return mb.del(l.k)
}

// The codecs of common types. BytesCodec's Decode returns the stored
// bytes themselves, valid until the batch's Commit or Reset.
var (
	BytesCodec  Codec[[]byte] = bytesCodec{}
	Int64Codec  Codec[int64]  = int64Codec{}
	StringCodec Codec[string] = stringCodec{}
)

type bytesCodec struct{}

func (bytesCodec) Append(dst, v []byte) []byte     { return append(dst, v...) }
func (bytesCodec) Decode(b []byte) ([]byte, error) { return b, nil }

type int64Codec struct{}

func (int64Codec) Append(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}
func (int64Codec) Decode(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, errBadInt64(len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func errBadInt64(n int) error {
	return fmt.Errorf("%w: an int64 of %d bytes, want 8", ErrBadValue, n)
}

type stringCodec struct{}

func (stringCodec) Append(dst []byte, v string) []byte { return append(dst, v...) }
func (stringCodec) Decode(b []byte) (string, error)    { return string(b), nil }

// ErrBadValue: stored bytes a codec cannot decode. It is
// ringstore.ErrCorrupt.
var ErrBadValue = ringstore.NewCorruptSentinel("state: a stored value its codec cannot decode")
