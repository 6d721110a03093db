// Package arrowscan runs concurrent analytic scans of Apache Arrow IPC
// files (as arrow-go v18 writes them) in four modes that return the same
// records:
//
//	mmap    the file mapped read-only; arrow-go decodes straight from the
//	        mapping, so only the projected columns' pages are faulted in
//	pread   the projected byte ranges read with pread through the page cache
//	direct  the projected byte ranges read with O_DIRECT through ioengine
//	        (io_uring or the syscall backend, per Options.IOMode and
//	        RINGSTORE_IO_URING), as covering 4 KiB-aligned ranges into aligned
//	        memory, Options.Prefetch batches ahead of the decoder
//	pool    the projected byte ranges pinned in a shared bufpool.Pool
//	        (O_DIRECT frames), the next Options.Prefetch batches prefetched;
//	        a scan announces every batch's frames when it starts and
//	        retracts what it did not reach when it closes
//	        (bufpool.Pool.Announce), so what one query loads stays until
//	        the other queries that will read it have
//
// # How a scan works
//
// Open parses the file itself: the footer (a bounds-checked flatbuffer
// reader, ParseFooter), the schema in it, and the metadata of every
// dictionary and record batch message, each checked against the file and
// the schema (see footer.go and message.go for the formats, drawn there).
// arrow-go decodes the schema (from a schema message made of the footer's
// own Field tables) and the data; arrowscan decides what to read.
//
// For a Scan of some columns, each record batch goes through:
//
//	footer block ──▶ batchMeta (nodes, buffers, per-field spans; parsed at Open)
//	     │
//	     ▼ intervals: the body byte ranges of the projected fields' buffers,
//	     │            sorted and merged (no assumption that a field's buffers
//	     │            are contiguous or that fields come in order)
//	     ▼ fetcher (per mode): read the intervals into one new contiguous body
//	     │            mmap: the mapping's slice, nothing read
//	     │            pread: packed, one pread per interval
//	     │            direct: aligned chunks, read straight into the body
//	     │            pool: Pin; the frames' memory itself when they lie
//	     │                  in one frame or the pool shows them as one
//	     │                  range (bufpool.Pool.Window), else
//	     │                  bufpool.CopyOut and Unpin
//	     ▼ projected RecordBatch message: only the projected fields' nodes,
//	     │            buffers (offsets remapped into the new body) and
//	     │            variadic counts; same length, compression, version
//	     ▼ ipc.NewReaderFromMessageReader(messageReader):
//	                  [projected Schema message] [dictionary batches of the
//	                  projected dictionary ids, as in the file, footer order]
//	                  [projected record batches, in order] → arrow.RecordBatch
//
// arrow-go thus handles compression (LZ4_FRAME, ZSTD), dictionaries and
// every type its reader knows; the layout rules (which nodes and buffers a
// type consumes) mirror its arrayLoaderContext.loadArray (layout.go).
//
// Dictionaries: a file carries them in its footer's dictionary blocks;
// arrow-go's FileReader applies them all before any record batch and
// refuses replacements. Open checks the same: every dictionary id belongs
// to a field, and an id has at most one non-delta batch. A Scan sends the
// dictionary batches of its projected fields' ids (nested ones included)
// before the first record batch. arrow-go's FileWriter never writes delta
// batches to files; they would be passed through in footer order, as the
// FileReader applies them.
//
// # Why not arrow-go's mapped reader for mmap
//
// ipc.NewMappedFileReader in arrow-go v18.8.0 panics ("assignment to entry
// in nil map") on any file with a dictionary field: it never initializes
// its dictionary memo. ModeMmap therefore feeds arrow-go's stream reader
// the same projected messages as the other modes, with the body as a slice
// of the mapping (no copy). That is also fairer to mmap than the mapped
// reader would be: with compressed files the mapped reader decompresses
// every column of every batch, touching all their pages.
//
// # Concurrency and lifetimes
//
// A File is immutable after Open except for its dictionary cache (loaded
// once per dictionary, sync.Once) and its scanner count (guarded by mu).
// Any number of Scanners of one File may run at once, one goroutine each;
// a Scanner is not safe for concurrent use.
//
// Scanner.Record is valid until the next Next or Close. Retain it to keep
// it; the arrays then keep their body alive until Released:
//
//   - pread, pool (copied): Go heap memory, recycled for a later batch of the
//     same Scanner once arrow-go releases it. A Go string or slice taken
//     from an array without copying (arrow-go's String.Value does not copy)
//     must not be used after the record is released.
//   - direct: off-heap aligned memory (directio.Alloc), recycled or freed
//     when released; the same rule, and a use after release may fault.
//   - pool, zero-copy: the pool frames themselves (one frame, or the file's
//     window over several), pinned until released: a retained record holds
//     pool memory.
//   - mmap: the mapping, unmapped by File.Close: release every record first.
//
// File.Close fails with ErrBusy while Scanners are open. Scanner.Close waits
// for its reads in flight.
//
// # Checksum sidecars
//
// Arrow IPC has no checksums, so a flipped byte in a batch's body decodes
// to a different value. A file with a sidecar (FILE.crc, sidecar.go draws
// it: a CRC32C per 4 KiB chunk of the file) has every byte range a mode
// reads checked against it before it is decoded: Open's footer and
// metadata reads and dictionaries widened to whole chunks; mmap the chunks
// a batch's projected ranges cover, and pread reads and checks whole
// chunks, each chunk once per open File (a bitmap); direct every chunk of
// every O_DIRECT read; pool the chunks a batch's projected ranges cover,
// each once per load of its frame (bufpool.Frame.CheckRange), so a frame's
// other columns are checked only when a scan that reads them pins it. A
// mismatch is a *CorruptError naming the file,
// the part and the chunk's offset. A sidecar of another size, or whose
// blocks the footer does not name, is an error naming both files; a
// format 1 sidecar (no chunk checksums) is ErrBadOptions.
// Options.SkipSidecarCheck turns the checks off; a file without a sidecar
// is read unchecked.
//
// # Checks before and after arrow-go
//
// arrow-go's readers trust the file: bad offsets panic (most panics are
// recovered into errors), a corrupt uncompressed-size prefix makes it
// allocate that much (the runtime's out-of-memory is fatal), and arrays
// are built without checking offsets or dictionary indices, so a value
// read later can panic the caller. So, besides the footer and metadata
// checks at Open:
//
//   - every buffer of a batch lies inside its body, every node has
//     0 ≤ nulls ≤ length, and the batch has exactly the nodes, buffers and
//     variadic counts the schema needs (layout.go);
//   - a compressed buffer's uncompressed size is bounded by what its codec
//     can expand the stored bytes to (LZ4 256×, zstd 32768×), at most 1 GiB,
//     and, for buffers whose size the node's length fixes, by that size
//     (project.go, checkCompressed), before arrow-go sees it;
//   - Field trees in the schema are bounded in depth (64) and count (no
//     shared or looping tables: arrow-go would recurse forever);
//   - every decoded column is checked (validate.go): array.Validate's
//     structure checks, then offsets non-decreasing, views inside their
//     buffers and dictionary indices inside the dictionary. Not UTF-8 nor
//     null counts (array.ValidateFull does those too; they cost a fifth of
//     the CPU of a 12-query scan and cannot make a read panic).
//     Options.TrustData skips this O(rows) step for files the process
//     wrote itself.
//
// A decode or validation failure gives the batch's body back at once
// (arrow-go's panic paths can lose count of it), so pool frames are never
// left pinned by a bad file.
//
// # Pool frames and read amplification
//
// The pool reads whole frames. A projected range of R bytes that starts
// anywhere in a frame costs up to R + 2×FrameSize bytes of device reads
// (a narrow column's 256 KiB chunk in 256 KiB frames usually spans two
// frames: 2× read amplification, measured in BenchmarkScan's poolreadB/op),
// where direct reads R rounded out to 4 KiB. Frames of 64 KiB keep that
// near 1.25× for such data. The other way round, each load has a fixed
// cost (a read, a window move): where the scans together read most
// columns, larger frames read no more and cost less CPU per byte
// (bench scan uses 1 MiB; docs/DECISIONS.md). arrow-go needs each batch's body as one
// contiguous slice. PoolOptions turns on the pool's windows, which show the
// frames a batch's ranges lie in as one range of memory in file order
// (bufpool.Pool.Window), so batches are decoded from the pool's memory
// whatever the frame size. Only where the pool has no windows (more than
// bufpool.MaxWindowFrames frames, not Linux, a failed mapping) or a batch
// needs more than a quarter of the pool's frames are the frames copied into
// a body (bufpool.CopyOut). The copy cost about a third of the CPU of 12
// concurrent queries on two cores (docs/DECISIONS.md).
//
// # Errors
//
// A truncated or corrupt file gives a *CorruptError (errors.Is ErrCorrupt)
// naming the file, the part (footer, schema, record batch 3, dictionary
// batch 0 metadata...), the file offset and what is wrong; arrow-go's decode
// errors and panics come back the same way, naming the batch. Failed reads
// are *ReadError naming file, part and range, unwrapping to the cause
// (ioengine.OpError, bufpool errors, errno). Unknown columns are
// *ColumnError (ErrUnknownColumn). Nothing here panics on file contents.
//
// Metadata versions V4 and V5 are read; other versions are refused.
package arrowscan
