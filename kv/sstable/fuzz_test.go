package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// The fuzz targets feed each decoder arbitrary bytes twice: as they are,
// and sealed with a correct checksum so that the fuzzer reaches the field
// checks behind it. A decoder must never panic, must return a
// *CorruptError naming the site's path and an offset inside its input,
// and what it accepts must survive a round trip.

const fuzzBase = 1 << 20 // the file offset the fuzzed bytes pretend to be at

func checkCorrupt(t *testing.T, err error, n int) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptError", err)
	}
	if ce.Path != "fuzz" || ce.Offset < fuzzBase || ce.Offset > fuzzBase+int64(n) {
		t.Fatalf("error names %s offset %d for %d bytes at %d: %v", ce.Path, ce.Offset, n, fuzzBase, err)
	}
}

func withCRC(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte{}, body...), crc32c.Checksum(body))
}

// sealBlock pads used into a data block with a correct trailer.
func sealBlock(used []byte) []byte {
	buf := make([]byte, alignUp(len(used)+blockTrailerLen))
	copy(buf, used)
	t := len(buf) - blockTrailerLen
	binary.LittleEndian.PutUint32(buf[t:], uint32(len(used)))
	binary.LittleEndian.PutUint32(buf[t+4:], blockCRC(used))
	return buf
}

func seedBlocks() [][]byte {
	var seeds [][]byte
	for _, n := range []int{1, 3, 17, 40} {
		var b blockBuilder
		for i := range n {
			k := InternalKey{UserKey: fmt.Appendf(nil, "key%03d", i/2), Seq: uint64(100 - i%2), Kind: Kind(i % 2)}
			var v []byte
			if k.Kind == KindSet {
				v = bytes.Repeat([]byte{byte(i)}, i*3)
			}
			b.add(appendKey(nil, k), v)
		}
		out, used := b.finish(nil)
		seeds = append(seeds, out[:used])
	}
	return append(seeds, nil, []byte{0, 0, 0, 0}, []byte{1, 0, 0, 0})
}

func FuzzDecodeBlock(f *testing.F) {
	for _, s := range seedBlocks() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, used []byte) {
		if len(used) > 1<<16 {
			return
		}
		for _, buf := range [][]byte{used, sealBlock(used)} {
			orig := bytes.Clone(buf)
			defer func() {
				if !bytes.Equal(orig, buf) {
					t.Fatal("decoding or reading the block wrote into its buffer")
				}
			}()
			// The lazy lookup reads less, so it may accept a block that
			// decodeBlock refuses, but it must not panic and its errors
			// must name the block.
			for _, k := range fuzzLookupKeys(buf) {
				if _, _, err := lookupInBlock(buf, site{"fuzz", fuzzBase}, k, MaxSeq, 0); err != nil {
					checkCorrupt(t, err, len(buf))
				}
			}
			note := noteBlock(buf, len(used))
			prefetchBlock(buf, len(used), note)
			prefetchBlock(buf, len(used), ^BlockNote(0))
			b, err := decodeBlock(buf, site{"fuzz", fuzzBase})
			if err != nil {
				checkCorrupt(t, err, len(buf))
				continue
			}
			// Accepted: the lookup agrees with the block at every version.
			checkLookups(t, buf, b)
			// Accepted, one frame, one restart: it has a note.
			if u := int(binary.LittleEndian.Uint32(buf[len(buf)-blockTrailerLen:])); len(buf) == Alignment && b.Len() <= restartInterval && noteBlock(buf, u)&1 == 0 {
				t.Fatalf("a sound block of %d entries has no note", b.Len())
			}
			// Accepted: entries are sorted, and Get finds the newest
			// version of every user key.
			it := b.Iter()
			var prev *InternalKey
			n := 0
			for it.Next() {
				k := cloneKey(it.Key())
				if prev != nil && Compare(*prev, k) >= 0 {
					t.Fatalf("entry %d: %s after %s", n, k, *prev)
				}
				if prev == nil || !bytes.Equal(prev.UserKey, k.UserKey) {
					v, kind, seq, found := b.Get(k.UserKey)
					if !found || kind != k.Kind || seq != k.Seq || !bytes.Equal(v, it.Value()) {
						t.Fatalf("Get(%q) = %v %s %d, iterator says %s", k.UserKey, found, kind, seq, k)
					}
				}
				prev = &k
				n++
			}
			if n != b.Len() {
				t.Fatalf("iterated %d entries, Len says %d", n, b.Len())
			}
			if _, _, _, found := b.Get(append(append([]byte{}, prev.UserKey...), 0)); found {
				t.Fatal("Get found a key after the last")
			}
		}
	})
}

// fuzzLookupKeys are user keys to look up in a fuzzed block: some of the
// seeds' keys, the empty key, and a key after all of them.
func fuzzLookupKeys(buf []byte) [][]byte {
	keys := [][]byte{nil, []byte("key000"), []byte("key005"), []byte("key019"), {0xff, 0xff}}
	if len(buf) > 12 {
		keys = append(keys, buf[3:12]) // bytes from the block itself
	}
	return keys
}

// checkLookups compares lookupInBlock with the decoded block b: for every
// user key and every snapshot that tells its versions apart, the newest
// version at or below the snapshot, or a spill when the block ends with
// newer ones; and nothing for keys between, before and after. Large blocks
// are sampled (32 keys).
func checkLookups(t *testing.T, buf []byte, b Block) {
	t.Helper()
	var all []InternalKey
	var values [][]byte
	it := b.Iter()
	for it.Next() {
		all = append(all, cloneKey(it.Key()))
		values = append(values, bytes.Clone(it.Value()))
	}
	s := site{"fuzz", fuzzBase}
	step := max(1, len(all)/32) // a sample of the keys: a lookup costs O(entries)
	for i := 0; i < len(all); i += step {
		k := all[i]
		for _, snap := range []uint64{MaxSeq, k.Seq, k.Seq - 1} {
			if k.Seq == 0 && snap == k.Seq-1 {
				continue
			}
			got, _, err := lookupInBlock(buf, s, k.UserKey, snap, 0)
			if err != nil {
				t.Fatalf("lookup %s as of %d in a block decodeBlock accepts: %v", k, snap, err)
			}
			// The expected answer: the first version of this user key
			// (newest first) with seq <= snap.
			want := -1
			for j := range all {
				if bytes.Equal(all[j].UserKey, k.UserKey) && all[j].Seq <= snap {
					want = j
					break
				}
			}
			if want < 0 {
				last := all[len(all)-1]
				spills := bytes.Equal(last.UserKey, k.UserKey)
				if got.Found || got.Spills != spills {
					t.Fatalf("lookup %s as of %d = %+v; want nothing, spills %v", k, snap, got, spills)
				}
				continue
			}
			w := all[want]
			if !got.Found || got.Kind != w.Kind || got.Seq != w.Seq || !bytes.Equal(got.Value, values[want]) {
				t.Fatalf("lookup %s as of %d = %+v; want %s (entry %d of %d, from %d)", k, snap, got, w, want, len(all), i)
			}
		}
		probe := append(bytes.Clone(k.UserKey), 0) // between this key and the next
		if got, _, err := lookupInBlock(buf, s, probe, MaxSeq, 0); err != nil || got.Found {
			t.Fatalf("lookup of absent %q = %+v, %v", probe, got, err)
		}
	}
	if len(all) > 0 && len(all[0].UserKey) > 0 {
		before := all[0].UserKey[:len(all[0].UserKey)-1]
		if got, _, err := lookupInBlock(buf, s, before, MaxSeq, 0); err != nil || got.Found {
			t.Fatalf("lookup of %q before the first key = %+v, %v", before, got, err)
		}
	}
}

func seedIndex() []byte {
	var es []indexEntry
	off := uint64(0)
	for i := range 5 {
		used := uint32(100 + 1000*i)
		h := BlockHandle{Offset: off, Len: uint64(alignUp(int(used) + blockTrailerLen))}
		es = append(es, indexEntry{lastKey: InternalKey{UserKey: fmt.Appendf(nil, "k%d", i), Seq: 9, Kind: KindSet}, handle: h, used: used})
		off += h.Len
	}
	return encodeIndex(nil, es)
}

// entries returns the index's blocks in the form the writer encodes.
func (x *blockIndex) entries() []indexEntry {
	es := make([]indexEntry, x.len())
	for i := range es {
		es[i] = x.entry(i)
	}
	return es
}

func FuzzDecodeIndex(f *testing.F) {
	idx := seedIndex()
	f.Add(idx[:len(idx)-4])
	f.Add(encodeIndex(nil, nil)[:1])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, buf := range [][]byte{body, withCRC(body)} {
			x, err := decodeIndex(buf, site{"fuzz", fuzzBase})
			if err != nil {
				checkCorrupt(t, err, len(buf))
				continue
			}
			es := x.entries()
			y, err := decodeIndex(encodeIndex(nil, es), site{"fuzz", fuzzBase})
			again := y.entries()
			if err != nil || len(again) != len(es) {
				t.Fatalf("re-encoded index: %v (%d of %d entries)", err, len(again), len(es))
			}
			for i := range es {
				if again[i].handle != es[i].handle || again[i].used != es[i].used || Compare(again[i].lastKey, es[i].lastKey) != 0 {
					t.Fatalf("entry %d: %+v became %+v", i, es[i], again[i])
				}
				if es[i].handle.Offset%Alignment != 0 || es[i].handle.Len%Alignment != 0 {
					t.Fatalf("entry %d: unaligned handle %+v accepted", i, es[i].handle)
				}
			}
		}
	})
}

func FuzzDecodeFilter(f *testing.F) {
	bf := newBloomFilter(100, 10)
	for i := range 100 {
		bf.addHash(bloomHash(fmt.Appendf(nil, "k%d", i)))
	}
	enc := encodeFilter(nil, bf)
	f.Add(enc[:len(enc)-4], []byte("k7"))
	f.Add([]byte{7, 0, 0, 0, 1, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0}, []byte("x"))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Fuzz(func(t *testing.T, body, key []byte) {
		for i, buf := range [][]byte{body, withCRC(body), body, withCRC(body)} {
			blocked := i >= 2 // each input in both layouts
			bf, err := decodeFilter(buf, site{"fuzz", fuzzBase}, blocked)
			if err != nil {
				checkCorrupt(t, err, len(buf))
				continue
			}
			if bf.blocked != blocked {
				t.Fatalf("decoded blocked=%v, asked for %v", bf.blocked, blocked)
			}
			if !bytes.Equal(encodeFilter(nil, bf), buf) {
				t.Fatal("filter does not re-encode to its input")
			}
			bf.mayContain(key)
			bf.addHash(bloomHash(key))
			if !bf.mayContain(key) {
				t.Fatalf("MayContain(%q) false after adding it", key)
			}
		}
	})
}

func FuzzDecodeFooter(f *testing.F) {
	good := encodeFooter(nil, footer{index: section{8192, 40}, filter: section{8232, 30}, props: section{8262, 20}, version: Version})
	f.Add(good)
	f.Add(good[:FooterLen-1])
	f.Add(make([]byte, FooterLen))
	f.Fuzz(func(t *testing.T, buf []byte) {
		bufs := [][]byte{buf}
		if len(buf) == FooterLen { // sealed: right checksum and magic
			s := append([]byte{}, buf...)
			binary.LittleEndian.PutUint32(s[52:], crc32c.Checksum(s[:52]))
			binary.LittleEndian.PutUint64(s[56:], Magic)
			bufs = append(bufs, s)
		}
		for _, b := range bufs {
			ft, err := decodeFooter(b, site{"fuzz", fuzzBase})
			if err != nil {
				checkCorrupt(t, err, len(b))
				continue
			}
			if !bytes.Equal(encodeFooter(nil, ft), b) {
				t.Fatalf("footer %+v does not re-encode to its input", ft)
			}
		}
	})
}

func FuzzDecodeProps(f *testing.F) {
	k := func(s string) InternalKey { return InternalKey{UserKey: []byte(s), Seq: 3, Kind: KindSet} }
	p := encodeProps(nil, Properties{Entries: 10, Deletes: 2, DataBlocks: 1, MaxSeq: 99, Smallest: k("a"), Largest: k("z")})
	f.Add(p[:len(p)-4])
	e := encodeProps(nil, Properties{})
	f.Add(e[:len(e)-4])
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, buf := range [][]byte{body, withCRC(body)} {
			p, err := decodeProps(buf, site{"fuzz", fuzzBase})
			if err != nil {
				checkCorrupt(t, err, len(buf))
				continue
			}
			q, err := decodeProps(encodeProps(nil, p), site{"fuzz", fuzzBase})
			if err != nil || q.Entries != p.Entries || q.Deletes != p.Deletes || q.DataBlocks != p.DataBlocks ||
				q.MaxSeq != p.MaxSeq || Compare(q.Smallest, p.Smallest) != 0 || Compare(q.Largest, p.Largest) != 0 {
				t.Fatalf("properties %+v became %+v, %v", p, q, err)
			}
		}
	})
}

// FuzzReader opens whole (small) files: every error is a *CorruptError and
// nothing panics.
func FuzzReader(f *testing.F) {
	for _, n := range []int{0, 1, 30} {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, Options{})
		for i := range n {
			w.Add(InternalKey{UserKey: fmt.Appendf(nil, "k%03d", i), Seq: 5, Kind: KindSet}, []byte("value"))
		}
		if _, err := w.Finish(); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<18 {
			return
		}
		err := checkBytes(data, "fuzz", -1)
		var ce *CorruptError
		if err != nil && (!errors.As(err, &ce) || ce.Path != "fuzz" || ce.Offset < 0 || ce.Offset > int64(len(data))) {
			t.Fatalf("error %v is not a *CorruptError inside the file", err)
		}
	})
}
