package sstable

import "github.com/ringstore/ringstore/kv/internal/base"

// The internal key and its order are kv's (package kv/internal/base); the
// names here are the same types, for users of this package.

// Kind says what an entry does to its user key.
type Kind = base.Kind

const (
	KindDelete = base.KindDelete
	KindSet    = base.KindSet
)

// MaxSeq is the largest sequence number a trailer can carry (56 bits).
const MaxSeq = base.MaxSeq

const trailerLen = base.TrailerLen

// InternalKey is a user key with the sequence number and kind of one
// version of it (see base.InternalKey for its order).
type InternalKey = base.InternalKey

// Compare orders internal keys: -1 when a sorts before b, 0 when equal, +1
// after.
func Compare(a, b InternalKey) int { return base.Compare(a, b) }

// Functions, not variables holding base's: a call through a variable is
// indirect and is never inlined, and parseKey runs once per entry a lookup
// reads.
func appendKey(dst []byte, k InternalKey) []byte { return base.AppendKey(dst, k) }
func parseKey(enc []byte) (InternalKey, bool)    { return base.ParseKey(enc) }
func cloneKey(k InternalKey) InternalKey         { return base.CloneKey(k) }
