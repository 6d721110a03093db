package format

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func FuzzDecodeStaleTable(f *testing.F) {
	img := bytes.Repeat([]byte("stale bytes "), (64<<10)/12+1)[:64<<10]
	f.Add(EncodeStaleTable(img), int64(64<<10))
	f.Add(EncodeStaleTable(img)[:100], int64(64<<10))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		if size > 1<<20 {
			size %= 1 << 20
		}
		st, err := DecodeStaleTable(b, size)
		if err != nil {
			return
		}
		if st == nil {
			if !AllZero(b[:4*(size/SectorSize)+4]) {
				t.Fatal("a table that is not zeros decoded as none")
			}
			return
		}
		if int64(len(st)) != 4*(size/SectorSize) {
			t.Fatalf("table of %d bytes for a segment of %d", len(st), size)
		}
		re := make([]byte, len(st)+4)
		copy(re, st)
		SealStaleTable(re, size)
		if !bytes.Equal(re, b[:len(re)]) {
			t.Fatal("re-sealing differs")
		}
		// Lookups past the table or the image answer false, never panic.
		small := make([]byte, SectorSize)
		for _, off := range []int64{0, SectorSize, size, size + SectorSize} {
			_ = st.Unchanged(small, off)
		}
	})
}

// The next stale table the committer builds is the table of the file as
// the segment's life leaves it: the header page, the entries each group
// wrote with zeros to the end of its page, and the earlier bytes after.
func TestNextTable(t *testing.T) {
	const size = 64 << 10
	limit := StaleTableOffset(size)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, earlier := range []string{"zeros", "bytes"} {
		for _, end := range []int64{SegmentHeaderSize, 700, 4096, 4100, 9000, limit - 5000, limit} {
			img := make([]byte, size)
			var stale StaleTable
			if earlier == "bytes" {
				for i := range img {
					img[i] = byte(rng.Uint32())
				}
				var err error
				if stale, err = DecodeStaleTable(EncodeStaleTable(img), size); err != nil {
					t.Fatal(err)
				}
			}
			h := make([]byte, PageSize)
			SegmentHeader{BaseSeq: 7, Size: size, Reusable: true}.Encode(h)
			copy(img, h)
			n := NewStaleTableBuilder(size, h[:SegmentHeaderSize])
			for off := int64(SegmentHeaderSize); off < end; {
				g := make([]byte, min(end-off, 1+rng.Int64N(3000)))
				for i := range g {
					g[i] = byte(rng.Uint32())
				}
				n.Add(g)
				copy(img[off:], g)
				off += int64(len(g))
				clear(img[off : (off+PageSize-1)/PageSize*PageSize])
			}
			got := n.Finish(end, size, stale)
			want := EncodeStaleTable(img)
			for s := int64(0); s < limit/SectorSize; s++ {
				if g, w := got[4*s:4*s+4], want[4*s:4*s+4]; !bytes.Equal(g, w) {
					t.Fatalf("earlier %s, entries to %d: sector %d (offset %d): table %x, file %x", earlier, end, s, s*SectorSize, g, w)
				}
			}
			if _, err := DecodeStaleTable(got, size); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(EncodeMeta(1))
	f.Add(EncodeMeta(1 << 40))
	f.Add([]byte("RSWALMET"))
	f.Fuzz(func(t *testing.T, b []byte) {
		first, err := DecodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrTruncated", err)
			}
			return
		}
		if !bytes.Equal(EncodeMeta(first), b) {
			t.Fatalf("decode(%x) = %d does not re-encode to the same bytes", b, first)
		}
	})
}

// TestMetaFile: the two-slot file reads as its larger valid slot, a torn
// slot is what a crash leaves and not an error, and the one-record file of
// before reads as that record.
func TestMetaFile(t *testing.T) {
	two := func(a, b []byte) []byte {
		f := make([]byte, MetaFileSize)
		copy(f, a)
		copy(f[MetaSlotSize:], b)
		return f
	}
	torn := append(EncodeMeta(90)[:10], make([]byte, MetaSize-10)...)
	cases := []struct {
		name  string
		b     []byte
		first uint64
		slot  int
		off   int64 // of the damage, when first is 0
	}{
		{"one record", EncodeMeta(7), 7, 0, 0},
		{"whole file", EncodeMetaFile(7), 7, 0, 0},
		{"slot 1 newer", two(EncodeMeta(7), EncodeMeta(40)), 40, 1, 0},
		{"slot 0 newer", two(EncodeMeta(41), EncodeMeta(40)), 41, 0, 0},
		{"slot 1 torn", two(EncodeMeta(7), torn), 7, 0, 0},
		{"slot 0 torn", two(torn, EncodeMeta(40)), 40, 1, 0},
		{"both torn", two(torn, torn), 0, 0, 0},
		{"slot 0 zero, slot 1 torn", two(nil, torn), 0, 0, 0},
		{"wrong size", EncodeMetaFile(7)[:MetaSlotSize], 0, 0, 0},
	}
	for _, c := range cases {
		first, slot, off, err := DecodeMetaFile(c.b)
		if c.first == 0 {
			if err == nil || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated)) || off != c.off {
				t.Errorf("%s: %d, %v at %d; want damage at %d", c.name, first, err, off, c.off)
			}
			continue
		}
		if err != nil || first != c.first || slot != c.slot {
			t.Errorf("%s: first %d slot %d, %v; want %d in slot %d", c.name, first, slot, err, c.first, c.slot)
		}
	}
}

func FuzzDecodeMetaFile(f *testing.F) {
	f.Add(EncodeMeta(1))
	f.Add(EncodeMetaFile(1 << 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		first, slot, _, err := DecodeMetaFile(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrTruncated", err)
			}
			return
		}
		rec := b
		if len(b) == MetaFileSize {
			rec = b[slot*MetaSlotSize : slot*MetaSlotSize+MetaSize]
		}
		if got, err := DecodeMeta(rec); err != nil || got != first || first == 0 {
			t.Fatalf("decode gave %d from slot %d, whose record decodes to %d, %v", first, slot, got, err)
		}
	})
}
