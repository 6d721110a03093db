package sstable

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

func (k Kind) valid() bool { return k == KindDelete || k == KindSet }

// MaxSeq is the largest sequence number a trailer can carry (56 bits).
const MaxSeq = 1<<56 - 1

// trailerLen is the size of the trailer that follows the user key in an
// encoded internal key: little-endian uint64 seq<<8 | kind.
const trailerLen = 8

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

// appendKey appends the encoded form of k: user key, then trailer.
func appendKey(dst []byte, k InternalKey) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.trailer())
}

// parseKey splits an encoded internal key. The user key aliases enc. It
// reports false when enc is shorter than a trailer or its kind is unknown.
func parseKey(enc []byte) (InternalKey, bool) {
	if len(enc) < trailerLen {
		return InternalKey{}, false
	}
	n := len(enc) - trailerLen
	t := binary.LittleEndian.Uint64(enc[n:])
	k := InternalKey{UserKey: enc[:n:n], Seq: t >> 8, Kind: Kind(t & 0xff)}
	return k, k.Kind.valid()
}

// cloneKey returns a copy of k that shares no memory with it.
func cloneKey(k InternalKey) InternalKey {
	k.UserKey = append([]byte{}, k.UserKey...)
	return k
}
