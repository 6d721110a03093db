// Package sstable is the sorted-string-table file format of ringstore's
// kv engine: an immutable file of sorted internal keys and their values,
// laid out so that a data block is read with one exact O_DIRECT read and
// checked with a CRC32C on every read.
//
//	w, err := sstable.NewWriter(f, sstable.Options{})
//	err = w.Add(sstable.InternalKey{UserKey: k, Seq: 7, Kind: sstable.KindSet}, v) // increasing keys
//	meta, err := w.Finish()  // then f.Sync(): the Writer never syncs
//
//	r, err := sstable.Open(path)
//	if r.MayContain(k) {
//		i, ok := r.BlockIndexFor(k)     // plan: no I/O
//		h := r.Block(i)
//		// read h.Len bytes at h.Offset into buf (a batch of such reads
//		// goes to the kernel in one io_uring submission)
//		got, err := r.GetInBlock(i, buf, k, sstable.MaxSeq) // CRC and what it reads checked
//		// got.Found, got.Value, got.Kind, got.Seq
//	}
//
//	b, err := r.DecodeBlock(h, buf) // every entry checked; b.Iter(), b.Get(k)
//
// # Keys
//
// An internal key is a user key and a trailer, seq<<8 | kind, with kind
// KindDelete (0) or KindSet (1) and seq below 2^56. Encoded, the trailer
// follows the user key as a little-endian uint64. Keys sort by user key
// (bytes.Compare) ascending, then by trailer descending: the newest
// version of a user key comes first. A file holds each internal key at
// most once, in strictly increasing order.
//
// # File format
//
//	offset 0
//	+----------------------------------+  <- multiple of 4096
//	| data block 0                     |
//	+----------------------------------+  <- multiple of 4096
//	| data block 1                     |
//	| ...                              |
//	+----------------------------------+  <- multiple of 4096: indexOff
//	| index       (crc32c)             |
//	+----------------------------------+  filterOff = indexOff + indexLen
//	| bloom filter (crc32c)            |
//	+----------------------------------+  propsOff = filterOff + filterLen
//	| properties  (crc32c)             |
//	+----------------------------------+  size - 64
//	| footer (64 bytes)                |
//	+----------------------------------+  size
//
// Data block, its length a multiple of 4096 (a block holds at least one
// entry; one larger than Options.BlockSize gets a block of its own):
//
//	+-------------------------------------------------------------+
//	| entry 0 | entry 1 | ... | entry n-1                         |
//	| restart[0] u32 | ... | restart[r-1] u32 | r u32             | <- "used" bytes
//	| zero padding                                                |
//	| used u32 | crc32c u32                                       | <- last 8 bytes
//	+-------------------------------------------------------------+
//
//	entry:  shared uvarint | unshared uvarint | valueLen uvarint |
//	        key[shared:] (unshared bytes) | value (valueLen bytes)
//
// Keys are prefix-compressed: an entry stores only the bytes of its
// encoded internal key after the prefix it shares with the previous key.
// Every 16th entry is a restart point with shared = 0; restart[i] is the
// offset of entry 16*i, so Block.Get binary-searches the restarts and
// then scans at most 16 entries. The crc32c (Castagnoli) covers the used
// bytes followed by used as a little-endian u32; the padding must be zero.
// All integers are little-endian.
//
// Index, one entry per data block in file order; the blocks are
// contiguous from offset 0, a block's length is used+8 rounded up to 4096:
//
//	count uvarint | count × { keyLen uvarint | last key of the block |
//	                         offset uvarint | used uvarint } | crc32c u32
//
// Bloom filter over the distinct user keys (Options.BloomBitsPerKey, 10 by
// default; k = round(bitsPerKey·ln 2) probes, at most 30), h a 64-bit
// FNV-1a hash of the user key passed through the murmur3 finalizer. In
// format version 2 the filter is blocked: its bits are lines of 512 (8
// words, one 64-byte cache line; rounded up to whole lines), a key's line
// is ((h>>32) · lines) >> 32, and probe i tests bit p_i>>23 of that line,
// with p_0 = uint32(h) and p_{i+1} = p_i · 0x9e3779b9 mod 2^32, so a lookup
// reads one line. Version 1 (still read) spreads the probes over all m
// bits, rounded up to whole words: probe i tests bit (h + i·δ) mod m, with
// δ = rotl(h, 31) | 1. Both layouts are stored alike:
//
//	k u32 | numWords u32 | numWords × u64 | crc32c u32
//
// Properties (both keys empty when the file has no entries):
//
//	entries uvarint | deletes uvarint | dataBlocks uvarint | maxSeq uvarint |
//	smallestLen uvarint | smallest | largestLen uvarint | largest | crc32c u32
//
// Footer, the file's last 64 bytes (the crc32c covers bytes 0..51):
//
//	 0 indexOff u64   8 indexLen u64  16 filterOff u64 24 filterLen u64
//	32 propsOff u64  40 propsLen u64  48 version u32   52 crc32c u32
//	56 magic u64 (Magic)
//
// # Checks and errors
//
// Open checks the footer (magic, version, checksum, that the sections
// follow one another and end at the footer), each section's checksum and
// fields, that the index's blocks are contiguous, sorted and end at the
// index, and that properties and index agree. DecodeBlock (iterators,
// compaction) checks the block's checksum, used length, padding, every
// entry's bounds, the restart array, the order of its keys, and that its
// first and last keys agree with the index (and, for the first block, the
// properties). GetInBlock (point reads: Reader.Get, kv's Get and MultiGet)
// checks the same frame (checksum, used length, padding, restart array),
// the first key against the index, and every entry it reads on its way to
// the key, but not the entries past it: the checksum already covers them,
// and walking them cost a fifth of the CPU of a cold MultiGet. Damage
// anywhere is a *CorruptError naming the
// file, the offset and what was wrong (errors.Is(err, ErrCorrupt)); a
// file that ends early is damage too. No input makes the package panic.
//
// # Concurrency and lifetimes
//
// A Writer is owned by one goroutine. A Reader is immutable after Open and
// safe for concurrent use; Close must not race with its other methods. A
// Block is immutable and aliases the buffer it was decoded from: its keys
// and values are valid only while that buffer is unchanged (kv keeps the
// block's buffer pinned while it uses them). BlockIter and Iterator are
// owned by one goroutine, and their keys and values are valid until the
// next call to Next. Values returned by Reader.Get are the caller's.
//
// # Durability
//
// Writer.Finish writes the whole file but never syncs: the caller must
// fsync the file, and for a new file its directory, before the file may
// be relied on after a crash (or named in a manifest). A file torn by a
// crash before that (any of its pages lost or stale) fails Open or the
// read of the damaged block with a *CorruptError, as every section and
// block carries a checksum; no damage is skipped silently.
//
// # O_DIRECT
//
// Data block offsets and lengths are multiples of Alignment (4096), so
// kv reads them with O_DIRECT into 4 KiB-aligned buffers (package
// directio). The metadata sections are not aligned: Open and NewReader
// read them, and Get and Iterator read blocks, through a descriptor that
// accepts unaligned reads (open the file without O_DIRECT for the
// Reader, and separately with O_DIRECT for batched block reads).
package sstable
