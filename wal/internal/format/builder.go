package format

import (
	"encoding/binary"

	"github.com/ringstore/ringstore/internal/crc32c"
)

var (
	zeroPage      [PageSize]byte
	zeroSectorCRC = crc32c.Checksum(zeroPage[:SectorSize])
)

// StaleTableBuilder builds the stale table a reusable segment's file will
// carry into its next use while the segment is written: the checksum of
// every sector once it is whole, and at Finish, of the sectors the
// segment's life left as they were. Its bytes are fed in file order, with
// no gaps, from the header on.
type StaleTableBuilder struct {
	table  []byte
	sector int64  // the sector carry belongs to
	carry  []byte // that sector's bytes so far
}

// NewStaleTableBuilder starts the table of a segment of size bytes whose
// header (the first bytes of sector 0) is h.
func NewStaleTableBuilder(size int64, h []byte) *StaleTableBuilder {
	n := &StaleTableBuilder{table: make([]byte, StaleTableSize(size)), carry: make([]byte, 0, SectorSize)}
	n.carry = append(n.carry, h...)
	return n
}

// Add takes the bytes written next, right after the last ones.
func (n *StaleTableBuilder) Add(b []byte) {
	if len(n.carry) > 0 {
		k := min(SectorSize-len(n.carry), len(b))
		n.carry, b = append(n.carry, b[:k]...), b[k:]
		if len(n.carry) < SectorSize {
			return
		}
		PutSectorCRCs(n.table, n.sector*SectorSize, n.carry)
		n.sector, n.carry = n.sector+1, n.carry[:0]
	}
	whole := len(b) / SectorSize * SectorSize
	PutSectorCRCs(n.table, n.sector*SectorSize, b[:whole])
	n.sector += int64(whole / SectorSize)
	n.carry = append(n.carry, b[whole:]...)
}

// Finish completes the table when the segment is sealed after its entries
// end at dataEnd: the last of them padded with zeros to the end of their
// page (as the group write left it), and from the next page on what the
// file held before (stale; nil: zeros). The builder is done after it.
func (n *StaleTableBuilder) Finish(dataEnd, size int64, stale StaleTable) []byte {
	s := n.sector
	if len(n.carry) > 0 {
		PutSectorCRCs(n.table, s*SectorSize, append(n.carry, zeroPage[:SectorSize-len(n.carry)]...))
		s++
	}
	pageEnd := (dataEnd + PageSize - 1) / PageSize * PageSize / SectorSize
	for ; s < size/SectorSize; s++ {
		crc := zeroSectorCRC
		if s >= pageEnd && stale != nil {
			crc = binary.LittleEndian.Uint32(stale[4*s:])
		}
		binary.LittleEndian.PutUint32(n.table[4*s:], crc)
	}
	SealStaleTable(n.table, size)
	return n.table
}
