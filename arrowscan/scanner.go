package arrowscan

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Scanner iterates over the record batches of one File, projected to the
// columns Scan was given. A Scanner is used by one goroutine; many Scanners
// of one File may run at once.
type Scanner struct {
	f    *File
	proj *projection

	// arrow-go's stream reader, fed projected messages by mr.
	mr  *messageReader
	rdr *ipc.Reader
	// schema is the records' schema; immutable, kept after Close.
	schema *arrow.Schema

	err    error
	done   bool
	closed bool
}

// Scan starts a scan of the named columns, in that order (nil or empty:
// every column). An unknown name is a *ColumnError naming it and the file.
func (f *File) Scan(columns []string) (*Scanner, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrClosed, f.path)
	}
	f.scanners++
	f.mu.Unlock()
	s, err := f.newScanner(columns)
	if err != nil {
		f.scannerDone()
		return nil, err
	}
	return s, nil
}

func (f *File) scannerDone() {
	f.mu.Lock()
	f.scanners--
	f.mu.Unlock()
}

func (f *File) newScanner(columns []string) (*Scanner, error) {
	proj, err := f.project(columns)
	if err != nil {
		return nil, err
	}
	s := &Scanner{f: f, proj: proj}
	s.mr = &messageReader{s: s, b: flatbuffers.NewBuilder(1024)}
	switch f.opts.Mode {
	case ModeMmap:
		s.mr.fetch = &mappedFetcher{f: f, p: proj}
	case ModePread:
		s.mr.fetch = newPreadFetcher(f, proj)
	case ModeDirect:
		s.mr.fetch = newDirectFetcher(f, proj)
	case ModePool:
		s.mr.fetch = newPoolFetcher(f, proj)
	}
	rdr, err := ipc.NewReaderFromMessageReader(s.mr)
	if err != nil {
		s.mr.fetch.close()
		return nil, &CorruptError{Path: f.path, Part: "schema", Offset: f.footer.Start, Err: err}
	}
	s.rdr, s.schema = rdr, rdr.Schema()
	if got := rdr.Schema().NumFields(); got != len(proj.cols) {
		rdr.Release()
		s.mr.release()
		s.mr.fetch.close()
		return nil, corrupt(f.path, "schema", f.footer.Start, "projected schema decoded to %d fields, want %d", got, len(proj.cols))
	}
	return s, nil
}

// Schema returns the schema of the scan's records, also after Close.
func (s *Scanner) Schema() *arrow.Schema { return s.schema }

// Next advances to the next record batch. It returns false at the end of
// the file or on an error (see Err).
func (s *Scanner) Next() bool {
	if s.done || s.closed {
		return false
	}
	if s.rdr.Next() {
		if s.f.opts.TrustData {
			return true
		}
		if err := s.validate(s.rdr.RecordBatch()); err != nil {
			s.err, s.done = err, true
			s.dropBody()
			return false
		}
		return true
	}
	s.done = true
	switch {
	case s.mr.err != nil:
		s.err = s.mr.err
	case s.rdr.Err() != nil:
		// No record of the failed message reached the caller: give its
		// body back even if arrow-go's panic path kept a reference.
		s.dropBody()
		s.err = &CorruptError{Path: s.f.path, Part: s.mr.lastPart, Offset: s.mr.lastOff, Detail: "arrow-go could not decode it", Err: s.rdr.Err()}
	case s.mr.nextBatch != len(s.f.batches):
		s.err = corrupt(s.f.path, "file", -1, "scan ended after %d of %d record batches", s.mr.nextBatch, len(s.f.batches))
	}
	return false
}

// dropBody gives back the body of the batch that failed to decode or
// validate: arrow-go's panic paths (decoding, validating) can leave a
// reference to it counted that no one will release, and the caller never
// sees the record (Record returns nil once the scan has ended).
func (s *Scanner) dropBody() {
	s.mr.release()
	if s.mr.lastOwner != nil && strings.HasPrefix(s.mr.lastPart, "record batch") {
		s.mr.lastOwner.Free(nil)
	}
}

// validate checks every column with validateColumn: arrow-go builds
// arrays from a file's buffers without such checks, and a value read from
// an inconsistent array can panic the caller.
func (s *Scanner) validate(rec arrow.RecordBatch) (err error) {
	i := s.mr.nextBatch - 1
	col := ""
	defer func() {
		if p := recover(); p != nil {
			err = corrupt(s.f.path, fmt.Sprintf("record batch %d", i), s.f.footer.RecordBatches[i].Offset, "column %q: arrow-go panicked validating it: %v", col, p)
		}
	}()
	for j, c := range rec.Columns() {
		col = rec.Schema().Field(j).Name
		if err := validateColumn(c); err != nil {
			return &CorruptError{Path: s.f.path, Part: fmt.Sprintf("record batch %d", i), Offset: s.f.footer.RecordBatches[i].Offset, Detail: fmt.Sprintf("column %q is inconsistent", col), Err: err}
		}
	}
	return nil
}

// Record returns the current record batch. It is valid until the next
// call to Next or Close; Retain it to keep it longer (and Release it).
func (s *Scanner) Record() arrow.RecordBatch {
	if s.closed || s.done {
		return nil
	}
	return s.rdr.RecordBatch()
}

// Err returns the error that ended the scan, or nil at a clean end.
func (s *Scanner) Err() error { return s.err }

// Close ends the scan: it releases the current record, waits for reads in
// flight and frees read-ahead memory. Bodies of records retained by the
// caller are freed when those records are released.
func (s *Scanner) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.rdr != nil {
		s.rdr.Release()
		s.rdr = nil
	}
	if s.mr != nil {
		s.mr.release()
		s.mr.fetch.close()
	}
	s.f.scannerDone()
	return nil
}

// fetcher reads the projected byte ranges of record batches, in order:
// each mode has one.
type fetcher interface {
	// next returns batch i's new body and where the projected intervals
	// lie in it. Calls come for i = 0, 1, 2, ... in order.
	// owner, if not nil, is the body's allocator: its Free (idempotent)
	// gives the memory back even if arrow-go lost count of the body.
	next(i int) (body *memory.Buffer, owner memory.Allocator, place []placed, err error)
	// close stops read-ahead, waits for reads in flight and frees what is
	// not held by records.
	close()
}

// messageReader is the ipc.MessageReader behind a Scanner: the projected
// schema message, the dictionary batches of the projected fields (as the
// file has them), then one projected record batch message per batch.
// Owned by the Scanner's goroutine.
type messageReader struct {
	s     *Scanner
	fetch fetcher
	b     *flatbuffers.Builder

	schemaSent bool
	nextDict   int
	nextBatch  int
	cur        *ipc.Message     // the message last returned; released at the next call
	lastOwner  memory.Allocator // allocator of the last record batch body, if any

	err      error  // a read or corruption error that ended the stream
	lastPart string // what the message last returned was, for decode errors
	lastOff  int64
}

func (m *messageReader) Retain()  {}
func (m *messageReader) Release() {}

func (m *messageReader) release() {
	if m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
}

func (m *messageReader) Message() (*ipc.Message, error) {
	m.release()
	if m.err != nil {
		return nil, m.err
	}
	f, p := m.s.f, m.s.proj
	var meta, body *memory.Buffer
	switch {
	case !m.schemaSent:
		m.schemaSent = true
		m.lastPart, m.lastOff = "schema", f.footer.Start
		meta, body = memory.NewBufferBytes(p.schemaFB), memory.NewBufferBytes(nil)
	case m.nextDict < len(p.dicts):
		d := p.dicts[m.nextDict]
		m.nextDict++
		m.lastPart, m.lastOff = fmt.Sprintf("dictionary batch %d", d.index), d.block.Offset
		if err := f.loadDict(d); err != nil {
			m.err = err
			return nil, err
		}
		meta, body = memory.NewBufferBytes(d.fb), memory.NewBufferBytes(d.body)
	case m.nextBatch < len(f.batches):
		i := m.nextBatch
		m.nextBatch++
		m.lastPart, m.lastOff = fmt.Sprintf("record batch %d", i), f.footer.RecordBatches[i].Offset
		b, owner, place, err := m.fetch.next(i)
		if err != nil {
			m.err = err
			return nil, err
		}
		m.lastOwner = owner
		if err := p.checkCompressed(f, i, b.Bytes(), place); err != nil {
			b.Release()
			if owner != nil {
				owner.Free(nil)
			}
			m.err = err
			return nil, err
		}
		body = b
		meta = memory.NewBufferBytes(p.batchMessage(m.b, &f.batches[i], place, int64(b.Len())))
	default:
		return nil, io.EOF
	}
	m.cur = ipc.NewMessage(meta, body) // retains both
	meta.Release()
	body.Release()
	return m.cur, nil
}

// readError names the batch a failed read belonged to.
func (f *File) batchReadError(i int, off, n int64, err error) error {
	var re *ReadError
	var ce *CorruptError
	if errors.As(err, &re) || errors.As(err, &ce) {
		return err
	}
	part := fmt.Sprintf("record batch %d", i)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &CorruptError{Path: f.path, Part: part, Offset: off, Detail: fmt.Sprintf("file ends inside the %d bytes at offset %d (truncated since Open?)", n, off), Err: err}
	}
	return &ReadError{Path: f.path, Part: part, Offset: off, Len: n, Err: err}
}
