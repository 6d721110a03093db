// Package format is the on-disk codec of package wal: the segment header,
// the entry frame, the trailer and the clean-close mark, the stale table of
// a reusable segment, and the wal.meta records. It encodes and decodes
// bytes and nothing else: it opens no files, and every decoding error wraps
// ErrEndOfEntries, ErrTruncated or ErrCorrupt so that the caller can name
// the file and offset it read. Package wal draws the layouts.
package format
