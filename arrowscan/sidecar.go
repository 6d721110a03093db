package arrowscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// Arrow IPC files carry no checksums: a flipped byte in a record batch's
// body decodes to a wrong value, and only the bounds and offsets checks see
// structural damage. Where ringstore writes the file itself (events.Generate,
// `ringstore gen events`), it can write a sidecar of CRC32C checksums next
// to it, FILE.crc, that VerifySidecar checks every byte of the file
// against, and that every scan of a File checks the byte ranges it reads
// against (chunk by chunk, see sidecarCheck):
//
//	offset  size  field
//	0       8     magic "RSARCRC1"
//	8       4     format version (2; 1 has no chunk checksums), little
//	              endian like every field
//	12      4     n: the number of blocks
//	16      8     the Arrow file's size
//	24      4     CRC32C of the file's bytes outside every block (magic,
//	              schema message, footer), in file order
//	28      4     chunk size c: a power of two from 512 to 4096, so that
//	              every 4 KiB-aligned range (an O_DIRECT read, a pool
//	              frame) is whole chunks (format 1: reserved, zero)
//	32      32×n  one entry per block, dictionaries first, then record
//	              batches, each in footer order:
//	                0  4  kind: 0 dictionary batch, 1 record batch
//	                4  4  index among blocks of its kind
//	                8  8  offset of the message
//	               16  4  metadata length (prefix, flatbuffer, padding)
//	               20  4  CRC32C of the message's bytes: metadata + body
//	               24  8  body length
//	32+32n  4×m   CRC32C of chunk k = the file's bytes [k×c, min((k+1)×c,
//	              size)), m = ceil(size / c) (format 2 only)
//	end-4   4     CRC32C of every byte before it
//
// The sidecar is written after the Arrow file is durable: to a temporary
// file, fsynced, renamed, and the directory fsynced, so FILE.crc is whole
// or absent. It describes one version of FILE: a FILE rewritten later
// fails the size or block check and is reported as not matching.

// SidecarSuffix is appended to an Arrow file's path to name its sidecar.
const SidecarSuffix = ".crc"

const (
	sidecarMagic   = "RSARCRC1"
	sidecarVersion = 2 // written; 1 is read too
	sidecarHead    = 32
	sidecarEntry   = 32
	// sidecarMaxBlocks bounds the entries a sidecar may claim, so a damaged
	// count cannot make the decoder allocate without limit.
	sidecarMaxBlocks = 1 << 24
	// SidecarChunkSize is the chunk size WriteSidecar uses: a chunk is the
	// unit a scan checks, so a read of a few bytes checks (and, in pread
	// mode, reads) at most two chunks more than it needs.
	SidecarChunkSize = 4096
	minSidecarChunk  = 512
	maxSidecarChunk  = 4096
)

// ErrNoSidecar: the Arrow file has no sidecar of checksums.
var ErrNoSidecar = errors.New("arrowscan: no checksum sidecar (Arrow IPC files have no checksums of their own; only their bounds and offsets are checked)")

// Sidecar is a decoded sidecar. ChunkSize 0 is format 1 (no chunk
// checksums); otherwise Chunks has one CRC32C per ChunkSize bytes of the
// file, the last chunk ending at FileSize.
type Sidecar struct {
	FileSize  int64
	RestCRC   uint32
	Entries   []SidecarEntry
	ChunkSize int
	Chunks    []uint32
}

// numChunks is the number of chunks of size c (a power of two) in a file of
// size bytes.
func numChunks(size int64, c int) int64 { return (size + int64(c) - 1) / int64(c) }

// SidecarEntry is the checksum of one block of the Arrow file.
type SidecarEntry struct {
	Kind  int // 0 dictionary batch, 1 record batch
	Index int
	Block Block
	CRC   uint32
}

func (e SidecarEntry) what() string {
	if e.Kind == 0 {
		return fmt.Sprintf("dictionary batch %d", e.Index)
	}
	return fmt.Sprintf("record batch %d", e.Index)
}

// EncodeSidecar returns the bytes of s: format 2 with its chunk checksums,
// or format 1 when s.ChunkSize is 0.
func EncodeSidecar(s Sidecar) []byte {
	b := make([]byte, sidecarHead, sidecarHead+sidecarEntry*len(s.Entries)+4*len(s.Chunks)+4)
	copy(b, sidecarMagic)
	version := uint32(sidecarVersion)
	if s.ChunkSize == 0 {
		version = 1
	}
	binary.LittleEndian.PutUint32(b[8:], version)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(s.Entries)))
	binary.LittleEndian.PutUint64(b[16:], uint64(s.FileSize))
	binary.LittleEndian.PutUint32(b[24:], s.RestCRC)
	binary.LittleEndian.PutUint32(b[28:], uint32(s.ChunkSize))
	for _, e := range s.Entries {
		var ent [sidecarEntry]byte
		binary.LittleEndian.PutUint32(ent[0:], uint32(e.Kind))
		binary.LittleEndian.PutUint32(ent[4:], uint32(e.Index))
		binary.LittleEndian.PutUint64(ent[8:], uint64(e.Block.Offset))
		binary.LittleEndian.PutUint32(ent[16:], uint32(e.Block.MetaLen))
		binary.LittleEndian.PutUint32(ent[20:], e.CRC)
		binary.LittleEndian.PutUint64(ent[24:], uint64(e.Block.BodyLen))
		b = append(b, ent[:]...)
	}
	for _, c := range s.Chunks {
		b = binary.LittleEndian.AppendUint32(b, c)
	}
	return binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b))
}

// DecodeSidecar parses a sidecar; name is used in errors, which are
// *CorruptError naming the offset of the bad bytes.
func DecodeSidecar(b []byte, name string) (Sidecar, error) {
	bad := func(off int64, format string, args ...any) (Sidecar, error) {
		return Sidecar{}, corrupt(name, "checksum sidecar", off, format, args...)
	}
	if len(b) < sidecarHead+4 {
		return bad(0, "%d bytes, too short for a sidecar (at least %d)", len(b), sidecarHead+4)
	}
	if string(b[:8]) != sidecarMagic {
		return bad(0, "magic %q, want %q", b[:8], sidecarMagic)
	}
	version := binary.LittleEndian.Uint32(b[8:])
	if version != 1 && version != sidecarVersion {
		return bad(8, "format version %d, this build reads 1 and %d", version, sidecarVersion)
	}
	n := binary.LittleEndian.Uint32(b[12:])
	size := int64(binary.LittleEndian.Uint64(b[16:]))
	chunk := int(binary.LittleEndian.Uint32(b[28:]))
	if size < 0 {
		return bad(16, "file size %d", size)
	}
	var m int64 // chunk checksums
	if version == 1 {
		if chunk != 0 {
			return bad(28, "reserved bytes of a format 1 sidecar are not zero")
		}
	} else {
		if chunk < minSidecarChunk || chunk > maxSidecarChunk || chunk&(chunk-1) != 0 {
			return bad(28, "chunk size %d (want a power of two from %d to %d)", chunk, minSidecarChunk, maxSidecarChunk)
		}
		if m = numChunks(size, chunk); m > int64(len(b))/4 {
			return bad(16, "a file of %d bytes has %d chunks of %d bytes, more than the sidecar's %d bytes hold", size, m, chunk, len(b))
		}
	}
	if need := sidecarHead + sidecarEntry*int64(n) + 4*m + 4; n > sidecarMaxBlocks || int64(len(b)) != need {
		return bad(12, "%d blocks and %d chunk checksums need %d bytes, the sidecar has %d", n, m, need, len(b))
	}
	end := len(b) - 4
	if got, want := binary.LittleEndian.Uint32(b[end:]), crc32c.Checksum(b[:end]); got != want {
		return bad(int64(end), "checksum %#08x, computed %#08x", got, want)
	}
	s := Sidecar{FileSize: size, RestCRC: binary.LittleEndian.Uint32(b[24:]), ChunkSize: chunk}
	for i := range int(n) {
		e := b[sidecarHead+sidecarEntry*i:]
		ent := SidecarEntry{Kind: int(binary.LittleEndian.Uint32(e[0:])), Index: int(binary.LittleEndian.Uint32(e[4:])),
			Block: Block{Offset: int64(binary.LittleEndian.Uint64(e[8:])), MetaLen: int32(binary.LittleEndian.Uint32(e[16:])), BodyLen: int64(binary.LittleEndian.Uint64(e[24:]))},
			CRC:   binary.LittleEndian.Uint32(e[20:])}
		if ent.Kind > 1 || ent.Block.Offset < 0 || ent.Block.MetaLen < 0 || ent.Block.BodyLen < 0 || ent.Block.End() > s.FileSize || ent.Block.End() < ent.Block.Offset {
			return bad(int64(sidecarHead+sidecarEntry*i), "entry %d (kind %d, offset %d, metadata %d, body %d) does not fit a file of %d bytes",
				i, ent.Kind, ent.Block.Offset, ent.Block.MetaLen, ent.Block.BodyLen, s.FileSize)
		}
		s.Entries = append(s.Entries, ent)
	}
	if m > 0 {
		s.Chunks = make([]uint32, m)
		at := sidecarHead + sidecarEntry*int(n)
		for k := range s.Chunks {
			s.Chunks[k] = binary.LittleEndian.Uint32(b[at+4*k:])
		}
	}
	return s, nil
}

// fileChecksums reads the Arrow file at path and returns its sidecar: the
// CRC32C of every block and of the bytes outside them. It reads with plain
// preads (through the page cache): a checksum pass reads every byte once.
func fileChecksums(f *os.File, path string) (Sidecar, *Footer, error) {
	st, err := f.Stat()
	if err != nil {
		return Sidecar{}, nil, &ReadError{Path: path, Part: "file", Offset: 0, Err: err}
	}
	ft, err := ParseFooter(f, st.Size(), path)
	if err != nil {
		return Sidecar{}, nil, err
	}
	s := Sidecar{FileSize: st.Size(), ChunkSize: SidecarChunkSize}
	s.Chunks = make([]uint32, numChunks(s.FileSize, s.ChunkSize))
	for i, b := range ft.Dictionaries {
		s.Entries = append(s.Entries, SidecarEntry{Kind: 0, Index: i, Block: b})
	}
	for i, b := range ft.RecordBatches {
		s.Entries = append(s.Entries, SidecarEntry{Kind: 1, Index: i, Block: b})
	}
	// Blocks in file order, to checksum the gaps between them.
	order := make([]int, len(s.Entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(s.Entries[a].Block.Offset - s.Entries[b].Block.Offset) })
	buf := make([]byte, 1<<20)
	crcOf := func(off, end int64, crc uint32) (uint32, error) {
		for off < end {
			n := min(int64(len(buf)), end-off)
			if _, err := f.ReadAt(buf[:n], off); err != nil {
				if errors.Is(err, io.EOF) {
					return 0, corrupt(path, "file", off, "ends before offset %d", end)
				}
				return 0, &ReadError{Path: path, Part: "file", Offset: off, Len: n, Err: err}
			}
			crc = crc32c.Update(crc, buf[:n])
			for at, data := off, buf[:n]; len(data) > 0; {
				k := at / int64(s.ChunkSize)
				take := min(int64(len(data)), (k+1)*int64(s.ChunkSize)-at)
				s.Chunks[k] = crc32c.Update(s.Chunks[k], data[:take])
				at, data = at+take, data[take:]
			}
			off += n
		}
		return crc, nil
	}
	var pos int64
	for _, i := range order {
		e := &s.Entries[i]
		if e.Block.Offset < pos {
			return Sidecar{}, nil, corrupt(path, e.what(), e.Block.Offset, "overlaps the block before it (which ends at %d)", pos)
		}
		if s.RestCRC, err = crcOf(pos, e.Block.Offset, s.RestCRC); err != nil {
			return Sidecar{}, nil, err
		}
		if e.CRC, err = crcOf(e.Block.Offset, e.Block.End(), 0); err != nil {
			return Sidecar{}, nil, err
		}
		pos = e.Block.End()
	}
	if s.RestCRC, err = crcOf(pos, s.FileSize, s.RestCRC); err != nil {
		return Sidecar{}, nil, err
	}
	return s, ft, nil
}

// WriteSidecar writes the sidecar of the Arrow file at path (path +
// SidecarSuffix): the file must be complete and durable; the sidecar is
// made durable before WriteSidecar returns (temporary file, fsync, rename,
// directory fsync).
func WriteSidecar(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("arrowscan: sidecar: %w", err)
	}
	s, _, err := fileChecksums(f, path)
	f.Close()
	if err != nil {
		return err
	}
	dst := path + SidecarSuffix
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(dst)+"-*.tmp")
	if err != nil {
		return fmt.Errorf("arrowscan: sidecar: %w", err)
	}
	_, werr := tmp.Write(EncodeSidecar(s))
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), dst)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("arrowscan: sidecar of %s: %w", path, werr)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("arrowscan: sidecar: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("arrowscan: sidecar: sync %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// SidecarReport is what VerifySidecar checked.
type SidecarReport struct {
	Path       string
	Bytes      int64 // the file's size: every byte was checked
	Blocks     int   // dictionary and record batches checked
	Dictionary int
	Records    int
}

// VerifySidecar checks the Arrow file at path against its sidecar: the
// file's size, that its footer names the blocks the sidecar lists, the
// CRC32C of every block and of the bytes between them. Every byte of the
// file is read once. A file without a sidecar fails with ErrNoSidecar; a
// mismatch is a *CorruptError naming the file, the block (record batch i),
// its offset and the expected and actual checksums.
func VerifySidecar(path string) (SidecarReport, error) {
	rep := SidecarReport{Path: path}
	raw, err := os.ReadFile(path + SidecarSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("%s: %w", path, ErrNoSidecar)
	}
	if err != nil {
		return rep, fmt.Errorf("arrowscan: sidecar: %w", err)
	}
	want, err := DecodeSidecar(raw, path+SidecarSuffix)
	if err != nil {
		return rep, err
	}
	f, err := os.Open(path)
	if err != nil {
		return rep, fmt.Errorf("arrowscan: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return rep, fmt.Errorf("arrowscan: %w", err)
	} else if st.Size() != want.FileSize {
		return rep, corrupt(path, "file", -1, "%d bytes, its sidecar describes a file of %d bytes (a different or truncated file)", st.Size(), want.FileSize)
	}
	got, _, err := fileChecksums(f, path)
	if err != nil {
		return rep, err
	}
	if len(got.Entries) != len(want.Entries) {
		return rep, corrupt(path, "footer", -1, "names %d blocks, its sidecar %d", len(got.Entries), len(want.Entries))
	}
	for i, g := range got.Entries {
		w := want.Entries[i]
		if g.Kind != w.Kind || g.Index != w.Index || g.Block != w.Block {
			return rep, corrupt(path, w.what(), w.Block.Offset, "the footer places it at offset %d (metadata %d, body %d), its sidecar at %d (%d, %d)",
				g.Block.Offset, g.Block.MetaLen, g.Block.BodyLen, w.Block.Offset, w.Block.MetaLen, w.Block.BodyLen)
		}
		if g.CRC != w.CRC {
			return rep, corrupt(path, w.what(), w.Block.Offset, "checksum %#08x, its sidecar says %#08x: the bytes %d..%d changed",
				g.CRC, w.CRC, w.Block.Offset, w.Block.End())
		}
		if g.Kind == 0 {
			rep.Dictionary++
		} else {
			rep.Records++
		}
	}
	if got.RestCRC != want.RestCRC {
		return rep, corrupt(path, "schema or footer", -1, "checksum of the bytes outside the batches %#08x, its sidecar says %#08x", got.RestCRC, want.RestCRC)
	}
	if want.ChunkSize != 0 {
		// Computed with SidecarChunkSize; a sidecar written with another
		// chunk size is checked chunk by chunk against the file again.
		wc, err := newSidecarCheck(path, want)
		if err != nil {
			return rep, err
		}
		if want.ChunkSize == got.ChunkSize {
			for k, c := range want.Chunks {
				if got.Chunks[k] != c {
					off := int64(k) * int64(want.ChunkSize)
					return rep, corrupt(path, wc.partAt(off), off, "chunk checksum %#08x, its sidecar says %#08x", got.Chunks[k], c)
				}
			}
		} else if err := wc.verifyFile(f); err != nil {
			return rep, err
		}
	}
	rep.Bytes, rep.Blocks = got.FileSize, len(got.Entries)
	return rep, nil
}
