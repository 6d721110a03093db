package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
)

// Lookup is what a point lookup found in one data block.
type Lookup struct {
	Value []byte // aliases the block's buffer; empty for a delete
	Kind  Kind
	Seq   uint64
	// Found: a version of the key with seq <= the snapshot.
	Found bool
	// Spills: nothing found, and the block ends with a version of the key
	// newer than the snapshot, so older versions may go on in the next
	// block.
	Spills bool
}

// BlockIndexFor is BlockFor by position: i is the block's place in the
// file (Block(i) is its handle). ok is false when userKey sorts after
// every key in the file.
func (r *Reader) BlockIndexFor(userKey []byte) (i int, ok bool) {
	i = r.blockIndex(userKey)
	return i, i < r.index.len()
}

// GetInBlock looks userKey up, as of snapshot snap, in data block i read
// into buf (exactly Block(i).Len bytes): the newest version with
// seq <= snap (MaxSeq: the newest of all). It is the point-read path of
// kv's MultiGet, and checks less than DecodeBlock, which walks every
// entry: the block's frame (length, trailer, checksum, zero padding,
// restart table), that it is the block the index names (its used length,
// its first key between the previous block's last key and its own), and
// every entry it reads on the way: the restart entries of a binary search,
// then the entries of one restart interval up to the key (bounds, key
// encoding, order, restart points, tombstones without values). A lookup
// that reads to the block's end also checks the index's last key and the
// restart count. Damage gives a *CorruptError naming the file and offset,
// as DecodeBlock does. The checksum covers every byte; what the walk adds
// is a defence against a block its writer got wrong, and entries this
// lookup does not read are left to the lookups that do.
func (r *Reader) GetInBlock(i int, buf, userKey []byte, snap uint64) (Lookup, error) {
	return r.getInBlock(i, buf, userKey, snap, false)
}

// GetInVerifiedBlock is GetInBlock on a block a GetInBlock lookup checked
// since it was read (a block cache that checks each block once, at its
// first lookup after a load, and keeps it marked): what that lookup
// checked of the block as a whole — checksum, padding, trailer, restart
// table, its first key and used length against the index — is not read
// again; the entries this lookup reads are checked as GetInBlock checks
// them.
func (r *Reader) GetInVerifiedBlock(i int, buf, userKey []byte, snap uint64) (Lookup, error) {
	return r.getInBlock(i, buf, userKey, snap, true)
}

func (r *Reader) getInBlock(i int, buf, userKey []byte, snap uint64, verified bool) (Lookup, error) {
	if i < 0 || i >= r.index.len() {
		return Lookup{}, fmt.Errorf("%w: %s has no data block %d (it has %d)", ErrBadHandle, r.path, i, r.index.len())
	}
	// The index's arrays are read as the checks need them: a lookup in a
	// verified block reads the handle and used length only.
	x := &r.index
	h := x.handle(i)
	if uint64(len(buf)) != h.Len {
		return Lookup{}, fmt.Errorf("%w: buffer of %d bytes for the %d-byte block at offset %d of %s", ErrBadHandle, len(buf), h.Len, h.Offset, r.path)
	}
	s := site{r.path, int64(h.Offset)}
	verifiedUsed := 0
	if verified {
		// The lookup that verified the block found the index's used length
		// in its trailer (below).
		verifiedUsed = int(x.used[i])
	}
	res, shape, err := lookupInBlock(buf, s, userKey, snap, verifiedUsed)
	if err != nil {
		return Lookup{}, err
	}
	switch {
	case shape.verified:
		// The lookup that verified the block checked its frame, restart
		// table and first key; only what this one read is left to check.
	case shape.used != int(x.used[i]):
		return Lookup{}, s.corrupt(len(buf)-blockTrailerLen, "data block used length %d, the index says %d", shape.used, x.used[i])
	case i == 0 && Compare(shape.first, r.props.Smallest) != 0:
		return Lookup{}, s.corrupt(0, "data block starts with key %s, the properties' smallest key is %s", shape.first, r.props.Smallest)
	case i > 0 && Compare(x.lastKey(i-1), shape.first) >= 0:
		return Lookup{}, s.corrupt(0, "data block starts with key %s, not after the previous block's last key %s", shape.first, x.lastKey(i-1))
	case Compare(shape.first, x.lastKey(i)) > 0:
		return Lookup{}, s.corrupt(0, "data block starts with key %s, after the index's last key %s", shape.first, x.lastKey(i))
	}
	if shape.readToEnd && Compare(shape.last, x.lastKey(i)) != 0 {
		return Lookup{}, s.corrupt(0, "data block ends with key %s, the index says %s", shape.last, x.lastKey(i))
	}
	return res, nil
}

// blockShape is what a lookup learnt of its block, for the checks against
// the index.
type blockShape struct {
	used      int
	verified  bool        // checked by an earlier lookup: first is not read
	first     InternalKey // aliases the block
	last      InternalKey // the caller's; set when readToEnd
	readToEnd bool
}

// lookupInBlock is GetInBlock on the block alone: the frame and the entries
// it reads are checked, the block's place in its file is not.
func lookupInBlock(buf []byte, s site, userKey []byte, snap uint64, verifiedUsed int) (Lookup, blockShape, error) {
	used, nr, dataEnd, err := checkBlockFrame(buf, s, verifiedUsed)
	if err != nil {
		return Lookup{}, blockShape{}, err
	}
	shape := blockShape{used: used, verified: verifiedUsed > 0}
	data := buf[:dataEnd]
	restart := func(k int) int { return int(binary.LittleEndian.Uint32(buf[dataEnd+4*k:])) }
	for k, prev := 0, -1; k < nr && !shape.verified; k++ {
		off := restart(k)
		if (k == 0 && off != 0) || off <= prev || off >= dataEnd {
			return Lookup{}, blockShape{}, s.corrupt(dataEnd+4*k, "data block restart %d at offset %d is out of order or outside the %d bytes of entries", k, off, dataEnd)
		}
		prev = off
	}
	readRestart := func(k int) (InternalKey, error) {
		off := restart(k)
		shared, unshared, _, p, bad := readEntryHeader(data, off)
		switch {
		case bad != "":
			return InternalKey{}, s.corrupt(off, "data block entry %d: %s", k*restartInterval, bad)
		case shared != 0:
			return InternalKey{}, s.corrupt(off, "data block restart entry %d shares %d key bytes", k*restartInterval, shared)
		}
		key := data[p : p+unshared : p+unshared]
		ik, ok := parseKey(key)
		if !ok {
			return InternalKey{}, s.corrupt(off, "data block entry %d: bad internal key %x", k*restartInterval, key)
		}
		return ik, nil
	}
	if !shape.verified {
		first, err := readRestart(0)
		if err != nil {
			return Lookup{}, blockShape{}, err
		}
		shape.first = first
	}

	// The last restart whose user key sorts before userKey: the newest
	// version of userKey, if any, is at or after it.
	lo, hi := 0, nr
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		ik, err := readRestart(mid)
		if err != nil {
			return Lookup{}, blockShape{}, err
		}
		if bytes.Compare(ik.UserKey, userKey) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}

	// Walk from there. Keys that share a prefix are rebuilt in one of two
	// scratch buffers, in turn, so the previous key stays intact for the
	// order check.
	scratch := lookupScratch.Get().(*[2][]byte)
	defer lookupScratch.Put(scratch)
	var prevRaw []byte
	var prev InternalKey
	spills := false
	n := lo * restartInterval // the entry's number in the block
	for off := restart(lo); off < dataEnd; n++ {
		if n%restartInterval == 0 {
			if k := n / restartInterval; k >= nr || restart(k) != off {
				return Lookup{}, blockShape{}, s.corrupt(dataEnd+4*min(k, nr-1), "data block restart %d does not point at entry %d (offset %d)", k, n, off)
			}
		}
		// readEntry, its parts kept in locals: this loop is the hot path.
		shared, unshared, vlen, p, bad := readEntryHeader(data, off)
		switch {
		case bad != "":
			return Lookup{}, blockShape{}, s.corrupt(off, "data block entry %d: %s", n, bad)
		case shared > len(prevRaw):
			return Lookup{}, blockShape{}, s.corrupt(off, "data block entry %d: %s", n, sharesTooMuch)
		}
		if n%restartInterval == 0 && shared != 0 {
			return Lookup{}, blockShape{}, s.corrupt(off, "data block restart entry %d shares %d key bytes", n, shared)
		}
		var key []byte
		key, scratch[n&1] = entryKey(data[p:p+unshared:p+unshared], prevRaw[:shared], scratch[n&1])
		p += unshared
		ik, ok := parseKey(key)
		switch {
		case !ok:
			return Lookup{}, blockShape{}, s.corrupt(off, "data block entry %d: bad internal key %x", n, key)
		case ik.Kind == KindDelete && vlen != 0:
			return Lookup{}, blockShape{}, s.corrupt(off, "data block entry %d: delete %s carries a %d-byte value", n, ik, vlen)
		case prevRaw != nil && !sortsAfter(prev, ik, shared):
			return Lookup{}, blockShape{}, s.corrupt(off, "data block entry %d: key %s does not sort after %s", n, ik, prev)
		}
		switch c := bytes.Compare(ik.UserKey, userKey); {
		case c > 0:
			return Lookup{}, shape, nil
		case c == 0 && ik.Seq <= snap:
			return Lookup{Value: data[p : p+vlen : p+vlen], Kind: ik.Kind, Seq: ik.Seq, Found: true}, shape, nil
		default:
			spills = c == 0
		}
		prevRaw, prev, off = key, ik, p+vlen
	}
	// Read to the end: the tail is checked, so check its end too.
	if want := (n + restartInterval - 1) / restartInterval; want != nr {
		return Lookup{}, blockShape{}, s.corrupt(used-4, "data block has %d restarts for %d entries", nr, n)
	}
	// prev may alias the scratch, which goes back to the pool.
	prev.UserKey = append([]byte(nil), prev.UserKey...)
	shape.last, shape.readToEnd = prev, true
	return Lookup{Spills: spills}, shape, nil
}

// sortsAfter says whether k sorts after prev, k's encoding sharing its
// first shared bytes with prev's: where both user keys go on past those,
// the next byte decides unless it is the same.
func sortsAfter(prev, k InternalKey, shared int) bool {
	if shared < len(prev.UserKey) && shared < len(k.UserKey) {
		if a, b := prev.UserKey[shared], k.UserKey[shared]; a != b {
			return a < b
		}
	}
	return Compare(prev, k) < 0
}

// lookupScratch holds the two key buffers of lookupInBlock's walk, reused
// across lookups: nothing the walk returns aliases them (errors are
// formatted at once, the last key is copied).
var lookupScratch = sync.Pool{New: func() any { return new([2][]byte) }}
