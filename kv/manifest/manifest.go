// Package manifest is kv's manifest: the set of live SST files in each
// level, with the next file number and the highest flushed seq. It is
// small and rewritten whole on every change (flush, compaction): Write
// puts the new version in MANIFEST.tmp, syncs it and renames it over
// MANIFEST, so a reader or a restart after a crash sees either the old
// version or the new one, never a mix.
//
//	v, err := manifest.Load(dir)          // errors.Is(err, fs.ErrNotExist): a new DB
//	v.Levels[0] = append([]manifest.FileMeta{f}, v.Levels[0]...)
//	err = manifest.Write(dir, v)          // durable when it returns nil
//
// # Format
//
// All integers are little-endian; uvarints are minimal (a longer
// encoding of the same number is damage), so an encoding is canonical:
// Encode(Decode(b)) == b.
//
//	+--------------------------------------------------------------+
//	| magic u64 (Magic)  | version u32 (FormatVersion)             |
//	| nextFileNum uvarint | flushedSeq uvarint                     |
//	| level 0: count uvarint | count × file                        |
//	| ...                                                          |
//	| level 6: count uvarint | count × file                        |
//	| crc32c u32 (Castagnoli, over every byte before it)           |
//	+--------------------------------------------------------------+
//
//	file:  num uvarint | size uvarint | maxSeq uvarint | entries uvarint |
//	       smallest key | largest key
//	key:   userKeyLen uvarint | user key | trailer u64 (seq<<8 | kind)
//
// The file ends right after the checksum.
//
// # Rules
//
// Validate, which Decode and Write run, checks that every file number is
// below NextFileNum and appears once; every file's MaxSeq is at most
// base.MaxSeq, and its Smallest <= Largest (base.Compare), both
// with a valid kind and a seq at most MaxSeq; L0 is newest first (Num
// strictly descending); in each level from L1 on files are sorted by
// Smallest and their user key ranges do not overlap (a file's largest
// user key is below the next one's smallest). Size, Entries and
// FlushedSeq are not checked against anything.
//
// # Crash safety
//
// Write syncs MANIFEST.tmp before the rename and the directory after it;
// the rename is the commit point. A MANIFEST.tmp left by a crash is never
// read and is overwritten by the next Write. Damage to MANIFEST (a torn or
// stale page) fails the checksum or a field check and Load returns a
// *CorruptError; nothing is repaired silently. The SST files a version
// names must be synced (with their directory) before the version is
// written.
package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/internal/durable"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/internal/base"
)

const (
	// NumLevels is the number of levels, L0 to L6.
	NumLevels = 7
	// FileName is the manifest's name in the DB directory.
	FileName = "MANIFEST"
	// TempName is the file Write writes before renaming it to FileName.
	TempName = FileName + ".tmp"
	// Magic opens every manifest: "RSMANIFS" little-endian.
	Magic uint64 = 0x5346494e_414d5352
	// FormatVersion is the format Encode writes and Decode accepts.
	FormatVersion uint32 = 1
)

var (
	// ErrCorrupt is wrapped by every *CorruptError.
	ErrCorrupt = ringstore.NewCorruptSentinel("manifest: corrupt")
	// ErrInvalid is wrapped by every *InvalidError.
	ErrInvalid = errors.New("manifest: invalid version")
)

// CorruptError reports a damaged manifest: its path, the offset of the bad
// bytes (the start of the field or file record being decoded) and what was
// wrong. errors.As gives it as a *ringstore.CorruptError too.
type CorruptError struct {
	Path   string
	Offset int64
	What   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("manifest: corrupt file %s at offset %d: %s", e.Path, e.Offset, e.What)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// As sets a **ringstore.CorruptError target to e's path, offset and what.
func (e *CorruptError) As(target any) bool {
	t, ok := target.(**ringstore.CorruptError)
	if ok {
		*t = &ringstore.CorruptError{Path: e.Path, Offset: e.Offset, What: e.What}
	}
	return ok
}

// InvalidError reports a Version that breaks one of the rules (see the
// package documentation): the level and the index in it of the file at
// fault (Index -1 when no one file is), its number and what was wrong.
type InvalidError struct {
	Level int
	Index int
	Num   uint64
	What  string
}

func (e *InvalidError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("manifest: invalid version: L%d: %s", e.Level, e.What)
	}
	return fmt.Sprintf("manifest: invalid version: L%d file %d (%06d.sst): %s", e.Level, e.Index, e.Num, e.What)
}

// Unwrap returns ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// FileMeta describes one live SST file.
type FileMeta struct {
	Num               uint64 // SST file number: file name is fmt.Sprintf("%06d.sst", Num)
	Size              uint64 // bytes
	Smallest, Largest base.InternalKey
	MaxSeq            uint64 // the largest seq in the file
	Entries           uint64
}

// Version is the state of the tree at one point: which files are live.
type Version struct {
	NextFileNum uint64 // > every Num
	FlushedSeq  uint64 // every write with seq <= FlushedSeq is in the files
	// L0 newest first (by Num descending); L1.. sorted by Smallest, user
	// key ranges not overlapping.
	Levels [NumLevels][]FileMeta
}

// Validate checks the rules of the package documentation and returns an
// *InvalidError naming the first level and file that breaks one.
func (v *Version) Validate() error {
	seen := make(map[uint64]int) // num -> level
	for level, files := range v.Levels {
		for i, f := range files {
			bad := func(format string, args ...any) error {
				return &InvalidError{Level: level, Index: i, Num: f.Num, What: fmt.Sprintf(format, args...)}
			}
			if f.Num >= v.NextFileNum {
				return bad("number not below NextFileNum %d", v.NextFileNum)
			}
			if l, dup := seen[f.Num]; dup {
				return bad("number also used in L%d", l)
			}
			seen[f.Num] = level
			if f.MaxSeq > base.MaxSeq {
				return bad("MaxSeq %d over base.MaxSeq", f.MaxSeq)
			}
			for _, k := range []base.InternalKey{f.Smallest, f.Largest} {
				if k.Kind != base.KindSet && k.Kind != base.KindDelete {
					return bad("key %v has an unknown kind", k)
				}
				if k.Seq > f.MaxSeq {
					return bad("key %v has a seq over MaxSeq %d", k, f.MaxSeq)
				}
			}
			if base.Compare(f.Smallest, f.Largest) > 0 {
				return bad("smallest %v after largest %v", f.Smallest, f.Largest)
			}
			if i == 0 {
				continue
			}
			p := files[i-1]
			if level == 0 {
				if p.Num <= f.Num {
					return bad("L0 not newest first: follows %06d.sst", p.Num)
				}
				continue
			}
			if base.Compare(p.Smallest, f.Smallest) > 0 {
				return bad("not sorted: smallest %v before %06d.sst's %v", f.Smallest, p.Num, p.Smallest)
			}
			if bytes.Compare(p.Largest.UserKey, f.Smallest.UserKey) >= 0 {
				return bad("overlaps %06d.sst: smallest %v not above its largest %v", p.Num, f.Smallest, p.Largest)
			}
		}
	}
	return nil
}

func appendKey(b []byte, k base.InternalKey) []byte {
	b = binary.AppendUvarint(b, uint64(len(k.UserKey)))
	b = append(b, k.UserKey...)
	return binary.LittleEndian.AppendUint64(b, k.Seq<<8|uint64(k.Kind))
}

// Encode returns v in the manifest format. It does not validate v (Write
// does); a Seq over base.MaxSeq does not survive the trailer.
func Encode(v *Version) []byte {
	b := binary.LittleEndian.AppendUint64(nil, Magic)
	b = binary.LittleEndian.AppendUint32(b, FormatVersion)
	b = binary.AppendUvarint(b, v.NextFileNum)
	b = binary.AppendUvarint(b, v.FlushedSeq)
	for _, files := range v.Levels {
		b = binary.AppendUvarint(b, uint64(len(files)))
		for _, f := range files {
			b = binary.AppendUvarint(b, f.Num)
			b = binary.AppendUvarint(b, f.Size)
			b = binary.AppendUvarint(b, f.MaxSeq)
			b = binary.AppendUvarint(b, f.Entries)
			b = appendKey(b, f.Smallest)
			b = appendKey(b, f.Largest)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b))
}

const (
	headerLen = 8 + 4
	crcLen    = 4
	// minFileLen is the shortest file record: four one-byte uvarints and
	// two keys with empty user keys.
	minFileLen = 4 + 2*(1+8)
)

// decoder reads fields from body, the bytes before the checksum.
type decoder struct {
	path string
	body []byte
	off  int
}

func (d *decoder) corrupt(off int, format string, args ...any) *CorruptError {
	return &CorruptError{Path: d.path, Offset: int64(off), What: fmt.Sprintf(format, args...)}
}

func (d *decoder) uvarint(what string) (uint64, error) {
	x, n := binary.Uvarint(d.body[d.off:])
	if n <= 0 {
		return 0, d.corrupt(d.off, "bad uvarint %s", what)
	}
	// Minimal encodings only: 7 bits per byte, at least one byte.
	if n != max(1, (bits.Len64(x)+6)/7) {
		return 0, d.corrupt(d.off, "non-minimal uvarint %s", what)
	}
	d.off += n
	return x, nil
}

func (d *decoder) key(what string) (base.InternalKey, error) {
	start := d.off
	n, err := d.uvarint(what + " length")
	if err != nil {
		return base.InternalKey{}, err
	}
	if n > uint64(len(d.body)-d.off) || uint64(len(d.body)-d.off)-n < 8 {
		return base.InternalKey{}, d.corrupt(start, "%s length %d past the end", what, n)
	}
	uk := bytes.Clone(d.body[d.off : d.off+int(n)])
	if uk == nil {
		uk = []byte{}
	}
	d.off += int(n)
	t := binary.LittleEndian.Uint64(d.body[d.off:])
	k := base.InternalKey{UserKey: uk, Seq: t >> 8, Kind: base.Kind(t & 0xff)}
	if k.Kind != base.KindSet && k.Kind != base.KindDelete {
		return k, d.corrupt(d.off, "%s has unknown kind %d", what, t&0xff)
	}
	d.off += 8
	return k, nil
}

// Decode parses a manifest encoded by Encode and validates it. name is
// the path errors name. Damage of any kind, including a version that
// breaks the rules, is a *CorruptError (errors.Is(err, ErrCorrupt)). No
// input makes Decode panic. The Version shares no memory with b.
func Decode(b []byte, name string) (*Version, error) {
	if len(b) < headerLen+crcLen {
		return nil, &CorruptError{Path: name, Offset: 0, What: fmt.Sprintf("%d bytes, shorter than header and checksum", len(b))}
	}
	if m := binary.LittleEndian.Uint64(b); m != Magic {
		return nil, &CorruptError{Path: name, Offset: 0, What: fmt.Sprintf("bad magic %#016x", m)}
	}
	body := b[:len(b)-crcLen]
	if got, want := binary.LittleEndian.Uint32(b[len(body):]), crc32c.Checksum(body); got != want {
		return nil, &CorruptError{Path: name, Offset: int64(len(body)), What: fmt.Sprintf("checksum %#08x, want %#08x", got, want)}
	}
	if fv := binary.LittleEndian.Uint32(b[8:]); fv != FormatVersion {
		return nil, &CorruptError{Path: name, Offset: 8, What: fmt.Sprintf("format version %d, want %d", fv, FormatVersion)}
	}
	d := &decoder{path: name, body: body, off: headerLen}
	v := &Version{}
	var err error
	if v.NextFileNum, err = d.uvarint("NextFileNum"); err != nil {
		return nil, err
	}
	if v.FlushedSeq, err = d.uvarint("FlushedSeq"); err != nil {
		return nil, err
	}
	var offsets [NumLevels][]int // each file record's offset, for errors
	for level := range v.Levels {
		countOff := d.off
		count, err := d.uvarint(fmt.Sprintf("L%d count", level))
		if err != nil {
			return nil, err
		}
		if count > uint64(len(body)-d.off)/minFileLen {
			return nil, d.corrupt(countOff, "L%d count %d too large for %d bytes left", level, count, len(body)-d.off)
		}
		if count == 0 {
			continue
		}
		files := make([]FileMeta, count)
		offsets[level] = make([]int, count)
		for i := range files {
			f := &files[i]
			offsets[level][i] = d.off
			what := func(field string) string { return fmt.Sprintf("L%d file %d %s", level, i, field) }
			for _, p := range []struct {
				dst  *uint64
				name string
			}{{&f.Num, "Num"}, {&f.Size, "Size"}, {&f.MaxSeq, "MaxSeq"}, {&f.Entries, "Entries"}} {
				if *p.dst, err = d.uvarint(what(p.name)); err != nil {
					return nil, err
				}
			}
			if f.Smallest, err = d.key(what("Smallest")); err != nil {
				return nil, err
			}
			if f.Largest, err = d.key(what("Largest")); err != nil {
				return nil, err
			}
		}
		v.Levels[level] = files
	}
	if d.off != len(body) {
		return nil, d.corrupt(d.off, "%d bytes after the last level", len(body)-d.off)
	}
	if err := v.Validate(); err != nil {
		off := headerLen
		var ie *InvalidError
		if errors.As(err, &ie) && ie.Index >= 0 {
			off = offsets[ie.Level][ie.Index]
		}
		return nil, d.corrupt(off, "%v", err)
	}
	return v, nil
}

// Write makes v the manifest of dir, durably: it validates v, writes
// MANIFEST.tmp (replacing any left by a crash), fsyncs it, renames it over
// MANIFEST and fsyncs dir. When Write fails, MANIFEST is the old version
// or, if only the directory sync failed, possibly the new one.
func Write(dir string, v *Version) error { return WriteVia(dir, v, nil) }

// WriteVia is Write with its fsyncs made through eng (durable.Fsync).
func WriteVia(dir string, v *Version, eng *ioengine.Engine) error {
	if err := v.Validate(); err != nil {
		return err
	}
	b := Encode(v)
	tmp := filepath.Join(dir, TempName)
	if err := writeSync(tmp, b, eng); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FileName)); err != nil {
		os.Remove(tmp)
		return err
	}
	crashfs.Renamed(tmp, filepath.Join(dir, FileName))
	return durable.SyncDirVia(dir, eng)
}

func writeSync(path string, b []byte, eng *ioengine.Engine) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	crashfs.Created(path, 0)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	crashfs.Wrote(path, 0, b)
	if err := durable.Fsync(f, eng); err != nil {
		f.Close()
		return err
	}
	crashfs.Synced(path, 0)
	return f.Close()
}

// Load reads and decodes dir's MANIFEST. When there is none the error
// satisfies errors.Is(err, fs.ErrNotExist); damage is a *CorruptError
// naming the file's path. A MANIFEST.tmp is ignored.
func Load(dir string) (*Version, error) {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(b, path)
}
