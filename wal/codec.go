package wal

import "github.com/ringstore/ringstore/wal/internal/format"

// Sizes of the fixed parts of the format, for tools that locate bytes in a
// segment file (the package doc draws the layout). The largest payload an
// AppendBatch can carry depends on the options: ask the Log
// (MaxBatchBytes), never these.
const (
	SegmentHeaderSize = format.SegmentHeaderSize
	TrailerSize       = format.TrailerSize
	EntryHeaderSize   = format.EntryHeaderSize
)

// Decoding errors. ErrEndOfEntries and ErrTruncated are what a torn tail
// looks like; ErrCorrupt is damage (it matches ringstore.ErrCorrupt). Each
// is wrapped with where it was found.
var (
	ErrEndOfEntries = format.ErrEndOfEntries
	ErrTruncated    = format.ErrTruncated
	ErrCorrupt      = format.ErrCorrupt
)

// EncodedLen is the size in a segment of an entry with a payload of n
// bytes.
func EncodedLen(n int) int { return format.EncodedLen(n) }
