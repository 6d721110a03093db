package state

import (
	"encoding/binary"
	"fmt"

	"github.com/ringstore/ringstore"
)

// ErrBadKey: bytes that are not a state key. It is ringstore.ErrCorrupt:
// a stored key that fails its layout is damage.
var ErrBadKey = ringstore.NewCorruptSentinel("state: not a state key")

// damaged is a stored value or record that fails its layout, found where
// no file or offset is known: a *ringstore.CorruptError whose message is
// what was wrong.
func damaged(format string, args ...any) error {
	return &ringstore.CorruptError{Offset: -1, What: fmt.Sprintf(format, args...)}
}

// internalID is the state id of the backend's own records.
const internalID = 0xFFFF

// KeyGroup returns the key group of key: FNV-1a of the key, mod
// maxGroups. Stable across versions: state on disk is placed by it.
func KeyGroup(key []byte, maxGroups int) int {
	h := uint32(2166136261) // FNV-1a, 32 bits
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h % uint32(maxGroups))
}

// prefixLen is how many bytes appendPrefix appends for key and ns.
func prefixLen(key, ns []byte) int {
	return 4 + uvarintLen(uint64(len(key))) + len(key) + uvarintLen(uint64(len(ns))) + len(ns)
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// appendPrefix appends the key layout up to the namespace: id, group, key,
// namespace (package doc).
func appendPrefix(dst []byte, id uint16, group int, key, ns []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, id)
	dst = binary.BigEndian.AppendUint16(dst, uint16(group))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(ns)))
	return append(dst, ns...)
}

// Key is a decoded state key.
type Key struct {
	ID         uint16
	Group      int
	Key, NS    []byte
	UserKey    []byte // Map states only; nil otherwise
	HasUserKey bool
}

// DecodeKey parses a state key (the inverse of the layout in the package
// doc); the slices alias b.
func DecodeKey(b []byte) (Key, error) {
	var k Key
	if len(b) < 4 {
		return k, fmt.Errorf("%w: %d bytes, shorter than the 4-byte id and key group", ErrBadKey, len(b))
	}
	k.ID, k.Group = binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
	rest := b[4:]
	field := func(what string) ([]byte, error) {
		n, m := binary.Uvarint(rest)
		if m <= 0 || n > uint64(len(rest)-m) {
			return nil, fmt.Errorf("%w: bad %s length at offset %d", ErrBadKey, what, len(b)-len(rest))
		}
		f := rest[m : m+int(n)]
		rest = rest[m+int(n):]
		return f, nil
	}
	var err error
	if k.Key, err = field("key"); err != nil {
		return Key{}, err
	}
	if k.NS, err = field("namespace"); err != nil {
		return Key{}, err
	}
	if len(rest) > 0 {
		k.UserKey, k.HasUserKey = rest, true
	}
	return k, nil
}

// Value encoding: 8-byte expiry (unix ns, 0: never), then the payload.
const valueHeader = 8

func encodeValue(expires int64, payload []byte) []byte {
	b := make([]byte, valueHeader, valueHeader+len(payload))
	binary.BigEndian.PutUint64(b, uint64(expires))
	return append(b, payload...)
}

// decodeValue splits a stored value into its expiry and payload.
func decodeValue(b []byte) (expires int64, payload []byte, err error) {
	if len(b) < valueHeader {
		return 0, nil, damaged("state: a stored value of %d bytes, shorter than its %d-byte header", len(b), valueHeader)
	}
	return int64(binary.BigEndian.Uint64(b)), b[valueHeader:], nil
}

// appendListItem and decodeList are a List's payload: items, each uvarint
// length + bytes.
func appendListItem(dst, item []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(item)))
	return append(dst, item...)
}

func decodeList(b []byte) ([][]byte, error) {
	var items [][]byte
	for len(b) > 0 {
		n, m := binary.Uvarint(b)
		if m <= 0 || n > uint64(len(b)-m) {
			return nil, damaged("state: a list item's length is damaged (%d bytes left)", len(b))
		}
		items = append(items, b[m:m+int(n)])
		b = b[m+int(n):]
	}
	return items, nil
}
