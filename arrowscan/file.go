package arrowscan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// File is an open Arrow IPC file. Its footer, schema and every block's
// metadata are read and checked by Open and immutable afterwards, so any
// number of Scanners may run on one File at once (one goroutine each).
type File struct {
	path    string
	opts    Options // immutable, defaults filled in
	size    int64
	footer  *Footer
	schema  *arrow.Schema
	batches []batchMeta // immutable after Open, one per footer record batch
	dicts   []*dictEntry
	byName  map[string]int // field name → index; -1 when the name is used twice

	// Mode-specific, immutable after Open.
	osf        *os.File         // pread, direct, pool
	ef         *ioengine.File   // osf as engine requests hold it (closing it closes osf)
	ranges     rangeReader      // metadata and dictionary reads
	eng        *ioengine.Engine // direct: data reads; direct/pool: metadata reads
	ownEngine  bool
	mapping    []byte         // mmap
	borrowed   bool           // mapping is not ours to unmap (openBytes)
	poolID     bufpool.FileID // pool
	registered bool           // pool: Close unregisters poolID
	check      *sidecarCheck  // the sidecar's checks; nil without a sidecar or with SkipSidecarCheck

	mu       sync.Mutex
	scanners int  // guarded by mu: open Scanners
	closed   bool // guarded by mu
}

// dictEntry is one dictionary batch of the file: metadata parsed at Open,
// message bytes read at the first Scan that needs them and kept.
type dictEntry struct {
	index int
	block Block
	meta  dictMeta

	once sync.Once
	fb   []byte // the Message flatbuffer (after the length prefix); set by once
	body []byte // set by once
	err  error  // set by once
}

// Open opens the Arrow IPC file at path for scans in opts.Mode. It reads
// the footer, the schema and every block's metadata itself and checks them
// (a truncated or corrupt file gives a *CorruptError naming the file, the
// part and the offset). A file with a checksum sidecar (path +
// SidecarSuffix) has what it reads checked against the sidecar, at Open
// and in every Scan, unless opts.SkipSidecarCheck; a sidecar that does not
// describe the file (its size, its blocks) is an error naming both.
func Open(path string, opts Options) (*File, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &File{path: path, opts: opts}
	if err := f.open(); err != nil {
		f.release()
		return nil, err
	}
	return f, nil
}

func (f *File) open() error {
	var err error
	switch f.opts.Mode {
	case ModeMmap, ModePread:
		f.osf, err = os.Open(f.path)
	default:
		f.osf, err = directio.OpenFile(f.path, os.O_RDONLY, 0)
	}
	if err != nil {
		return fmt.Errorf("arrowscan: open: %w", err)
	}
	f.ef = ioengine.NewFile(f.osf)
	st, err := f.osf.Stat()
	if err != nil {
		return fmt.Errorf("arrowscan: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrBadOptions, f.path)
	}
	f.size = st.Size()

	switch f.opts.Mode {
	case ModeMmap:
		if f.size < minFile {
			break // ParseFooter says what is wrong
		}
		if f.mapping, err = mapFile(f.osf, f.size); err != nil {
			return fmt.Errorf("arrowscan: mmap %s: %w", f.path, err)
		}
		// Metadata with pread, not through the mapping: a fault on the
		// mapping reads the device's whole readahead window around it
		// (read_ahead_kb, often MiBs), so touching every block's metadata
		// would read most of the file at Open.
		f.ranges = preadRanges{f.osf}
	case ModePread:
		f.ranges = preadRanges{f.osf}
	case ModeDirect, ModePool:
		f.eng = f.opts.Engine
		if f.eng == nil {
			mode := f.opts.IOMode
			if f.opts.Mode == ModePool {
				// Only Open's metadata reads use it: no ring for that.
				mode = ioengine.Syscall
			}
			if f.eng, err = ioengine.New(ioengine.Options{Mode: mode}); err != nil {
				return fmt.Errorf("arrowscan: %s: %w", f.path, err)
			}
			f.ownEngine = true
		}
		f.ranges = directRanges{file: f.ef, eng: f.eng}
	}
	if f.ranges == nil {
		f.ranges = preadRanges{f.osf}
	}
	if !f.opts.SkipSidecarCheck {
		if f.check, err = loadSidecarCheck(f.path, f.size); err != nil {
			return err
		}
		if f.check != nil {
			f.ranges = checkedRanges{f.ranges, f.check}
		}
	}
	if err := f.parse(); err != nil {
		return err
	}
	if f.opts.Mode == ModePool {
		if f.poolID, err = f.opts.Pool.Register(f.ef, f.size, f.path); err != nil {
			return fmt.Errorf("arrowscan: %s: %w", f.path, err)
		}
		f.registered = true
	}
	return nil
}

// openBytes opens an Arrow IPC file held in memory as if mapped (ModeMmap),
// for the fuzz tests: every parse and decode step runs, no file is needed.
func openBytes(name string, data []byte) (*File, error) {
	f := &File{path: name, opts: Options{Mode: ModeMmap}, size: int64(len(data)), mapping: data, ranges: bytesRanges(data), borrowed: true}
	if err := f.parse(); err != nil {
		return nil, err
	}
	return f, nil
}

// parse reads and checks the footer, the schema and every block's
// metadata through f.ranges.
func (f *File) parse() error {
	var err error
	if f.footer, err = ParseFooter(readerAt{f.ranges}, f.size, f.path); err != nil {
		return f.readErr(err, "footer", -1, 0)
	}
	if f.check != nil {
		if err := f.check.checkBlocks(f.footer); err != nil {
			return err
		}
	}
	all := make([]int, len(f.footer.schema.fields))
	for i := range all {
		all[i] = i
	}
	if f.schema, err = decodeSchema(schemaMessage(f.footer, f.footer.Version, all)); err != nil {
		return &CorruptError{Path: f.path, Part: "schema", Offset: f.footer.Start, Err: err}
	}
	if f.schema.NumFields() != len(all) {
		return corrupt(f.path, "schema", f.footer.Start, "arrow-go decoded %d fields, the footer has %d", f.schema.NumFields(), len(all))
	}
	f.byName = make(map[string]int, len(all))
	for i, fld := range f.schema.Fields() {
		if _, dup := f.byName[fld.Name]; dup {
			f.byName[fld.Name] = -1
		} else {
			f.byName[fld.Name] = i
		}
	}
	return f.readBlockMetadata()
}

// readErr turns a failed read into an error naming the file and part;
// *CorruptError and *ReadError pass through.
func (f *File) readErr(err error, part string, off, n int64) error {
	var ce *CorruptError
	var re *ReadError
	if errors.As(err, &ce) || errors.As(err, &re) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt(f.path, part, off, "file ends before the %d bytes the footer says are there (truncated?)", n)
	}
	return &ReadError{Path: f.path, Part: part, Offset: off, Len: n, Err: err}
}

// readBlockMetadata reads and checks every dictionary and record batch
// message's metadata.
func (f *File) readBlockMetadata() error {
	ft := f.footer
	rs := make([]fileRange, 0, len(ft.Dictionaries)+len(ft.RecordBatches))
	for _, b := range ft.Dictionaries {
		rs = append(rs, fileRange{b.Offset, int64(b.MetaLen)})
	}
	for _, b := range ft.RecordBatches {
		rs = append(rs, fileRange{b.Offset, int64(b.MetaLen)})
	}
	metas, bad, err := f.ranges.readRanges(rs)
	if err != nil {
		return f.readErr(err, f.blockName(bad), rs[bad].off, rs[bad].len)
	}
	nd := len(ft.Dictionaries)
	known := make(map[int64]bool)
	for _, fi := range ft.schema.fields {
		for _, id := range fi.dictIDs {
			known[id] = true
		}
	}
	seen := make(map[int64]int) // dictionary id → first non-delta block
	for i, b := range ft.Dictionaries {
		dm, err := parseDictionaryBatch(metas[i], b.BodyLen)
		if err != nil {
			return f.metaErr(err, i, b)
		}
		if !known[dm.id] {
			return corrupt(f.path, f.blockName(i), b.Offset, "dictionary id %d is not used by any field of the schema", dm.id)
		}
		if !dm.isDelta {
			if first, ok := seen[dm.id]; ok {
				return corrupt(f.path, f.blockName(i), b.Offset, "dictionary id %d replaced (first in dictionary batch %d): an IPC file may only add deltas", dm.id, first)
			}
			seen[dm.id] = i
		}
		f.dicts = append(f.dicts, &dictEntry{index: i, block: b, meta: dm})
	}
	f.batches = make([]batchMeta, len(ft.RecordBatches))
	for i, b := range ft.RecordBatches {
		bm, err := parseRecordBatch(metas[nd+i], b.BodyLen)
		if err != nil {
			return f.metaErr(err, nd+i, b)
		}
		if err := layoutBatch(f.schema, &bm); err != nil {
			return corrupt(f.path, f.blockName(nd+i), b.Offset, "%v", err)
		}
		f.batches[i] = bm
	}
	return nil
}

// blockName names block i of the footer's dictionaries followed by its
// record batches.
func (f *File) blockName(i int) string {
	if nd := len(f.footer.Dictionaries); i >= nd {
		return fmt.Sprintf("record batch %d", i-nd)
	}
	return fmt.Sprintf("dictionary batch %d", i)
}

func (f *File) metaErr(err error, i int, b Block) error {
	var fe *fbError
	if errors.As(err, &fe) {
		return corrupt(f.path, f.blockName(i)+" metadata", b.Offset+fe.Pos, "%s", fe.What)
	}
	return &CorruptError{Path: f.path, Part: f.blockName(i) + " metadata", Offset: b.Offset, Err: err}
}

// loadDict reads dictionary batch d's message once and keeps it.
func (f *File) loadDict(d *dictEntry) error {
	d.once.Do(func() {
		r := fileRange{d.block.Offset, int64(d.block.MetaLen) + d.block.BodyLen}
		bufs, _, err := f.ranges.readRanges([]fileRange{r})
		if err != nil {
			d.err = f.readErr(err, f.blockName(d.index), r.off, r.len)
			return
		}
		msg := bufs[0]
		prefix, err := messagePrefix(msg[:d.block.MetaLen])
		if err != nil {
			d.err = f.metaErr(err, d.index, d.block)
			return
		}
		// Metadata read again now: it must still be what Open checked.
		if _, err := parseDictionaryBatch(msg[:d.block.MetaLen], d.block.BodyLen); err != nil {
			d.err = f.metaErr(err, d.index, d.block)
			return
		}
		d.fb = msg[prefix:d.block.MetaLen:d.block.MetaLen]
		d.body = msg[d.block.MetaLen:]
		if err := checkDictCompressed(f, d); err != nil {
			d.fb, d.body, d.err = nil, nil, err
		}
	})
	return d.err
}

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// Schema returns the file's schema, as arrow-go decodes it.
func (f *File) Schema() *arrow.Schema { return f.schema }

// NumRecordBatches returns the number of record batches in the footer.
func (f *File) NumRecordBatches() int { return len(f.batches) }

// Blocks returns the footer's record batch blocks, in file order.
func (f *File) Blocks() []Block { return append([]Block(nil), f.footer.RecordBatches...) }

// DictionaryBlocks returns the footer's dictionary batch blocks.
func (f *File) DictionaryBlocks() []Block { return append([]Block(nil), f.footer.Dictionaries...) }

// NumRows returns the total row count of the record batches.
func (f *File) NumRows() int64 {
	var n int64
	for i := range f.batches {
		n += f.batches[i].length
	}
	return n
}

// Size returns the file size.
func (f *File) Size() int64 { return f.size }

// SidecarChecked reports whether the file's reads are checked against a
// checksum sidecar (it has one and Options.SkipSidecarCheck is not set).
func (f *File) SidecarChecked() bool { return f.check != nil }

// Mode returns the mode the file was opened in.
func (f *File) Mode() Mode { return f.opts.Mode }

// Close releases the file. Every Scanner of the file must be closed first
// (otherwise Close returns an error wrapping ErrBusy and closes nothing),
// and every record from it released: in ModeMmap a record still used after
// Close faults the process; in ModePool a record still held keeps its
// pool frames pinned and Close reports that (the frames return to the pool
// at the record's Release).
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	if f.scanners > 0 {
		n := f.scanners
		f.mu.Unlock()
		return fmt.Errorf("%w: %s: %d scanners still open", ErrBusy, f.path, n)
	}
	f.closed = true
	f.mu.Unlock()
	return f.release()
}

// release frees what open made, in reverse order.
func (f *File) release() error {
	var errs []error
	if f.registered {
		if err := f.opts.Pool.Unregister(f.poolID); err != nil {
			errs = append(errs, fmt.Errorf("arrowscan: %s: %w", f.path, err))
		}
	}
	if f.ownEngine && f.eng != nil {
		if err := f.eng.Close(); err != nil {
			errs = append(errs, fmt.Errorf("arrowscan: %s: %w", f.path, err))
		}
	}
	if f.mapping != nil && !f.borrowed {
		if err := unmapFile(f.mapping); err != nil {
			errs = append(errs, fmt.Errorf("arrowscan: munmap %s: %w", f.path, err))
		}
	}
	if f.ef != nil {
		if err := f.ef.Close(); err != nil {
			errs = append(errs, fmt.Errorf("arrowscan: %w", err))
		}
	}
	return errors.Join(errs...)
}
