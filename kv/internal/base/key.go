// Package base is kv's vocabulary, shared by the memtable, the tables,
// the manifest and the store: the internal key (a user key with the
// sequence number and kind of one version of it), its order and its
// encoding. It imports nothing of kv, so every part of kv can import it.
//
// An encoded internal key is the user key, then an 8-byte little-endian
// trailer seq<<8 | kind:
//
//	+----------------+---------------------------+
//	| user key bytes | trailer: seq<<8 | kind (8) |
//	+----------------+---------------------------+
package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Kind says what an entry does to its user key.
type Kind uint8

const (
	// KindDelete is a tombstone: the user key has no value at this seq.
	KindDelete Kind = 0
	// KindSet gives the user key a value at this seq.
	KindSet Kind = 1
)

func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "delete"
	case KindSet:
		return "set"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid says whether k is a kind an entry may have.
func (k Kind) Valid() bool { return k == KindDelete || k == KindSet }

// MaxSeq is the largest sequence number a trailer can carry (56 bits).
const MaxSeq = 1<<56 - 1

// TrailerLen is the size of the trailer that follows the user key in an
// encoded internal key.
const TrailerLen = 8

// InternalKey is a user key with the sequence number and kind of one
// version of it. Internal keys sort by user key ascending (bytes.Compare),
// then by seq descending, so the newest version of a user key comes first;
// for one seq, KindSet sorts before KindDelete (a larger trailer first).
type InternalKey struct {
	UserKey []byte
	Seq     uint64
	Kind    Kind
}

func (k InternalKey) trailer() uint64 { return k.Seq<<8 | uint64(k.Kind) }

func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.Seq, k.Kind)
}

// Compare orders internal keys: -1 when a sorts before b, 0 when equal, +1
// after.
func Compare(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	at, bt := a.trailer(), b.trailer()
	switch {
	case at > bt:
		return -1
	case at < bt:
		return +1
	}
	return 0
}

// AppendKey appends the encoded form of k: user key, then trailer.
func AppendKey(dst []byte, k InternalKey) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.trailer())
}

// ParseKey splits an encoded internal key. The user key aliases enc. It
// reports false when enc is shorter than a trailer or its kind is unknown.
func ParseKey(enc []byte) (InternalKey, bool) {
	if len(enc) < TrailerLen {
		return InternalKey{}, false
	}
	n := len(enc) - TrailerLen
	t := binary.LittleEndian.Uint64(enc[n:])
	k := InternalKey{UserKey: enc[:n:n], Seq: t >> 8, Kind: Kind(t & 0xff)}
	return k, k.Kind.Valid()
}

// CloneKey returns a copy of k that shares no memory with it.
func CloneKey(k InternalKey) InternalKey {
	k.UserKey = append([]byte{}, k.UserKey...)
	return k
}
