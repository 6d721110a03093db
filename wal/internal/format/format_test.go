package format

import (
	"bytes"
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	var buf []byte
	payloads := [][]byte{{}, []byte("a"), bytes.Repeat([]byte{0xAB}, 1024), bytes.Repeat([]byte{0}, 100)}
	for i, p := range payloads {
		buf = AppendEntry(buf, uint64(i+1), p)
	}
	buf = append(buf, make([]byte, 64)...) // preallocated zeros
	off := 0
	for i, want := range payloads {
		seq, got, n, err := DecodeEntry(buf[off:], 1<<20)
		if err != nil || seq != uint64(i+1) || !bytes.Equal(got, want) || n != EncodedLen(len(want)) {
			t.Fatalf("entry %d: seq %d len %d n %d err %v", i, seq, len(got), n, err)
		}
		off += n
	}
	if _, _, _, err := DecodeEntry(buf[off:], 1<<20); !errors.Is(err, ErrEndOfEntries) {
		t.Fatalf("after the last entry: %v, want ErrEndOfEntries", err)
	}
}

func TestEntryDamage(t *testing.T) {
	good := AppendEntry(nil, 7, []byte("hello, log"))
	cases := []struct {
		name    string
		corrupt func([]byte) []byte
		want    error
	}{
		{"torn in header", func(b []byte) []byte { return b[:10] }, ErrTruncated},
		{"torn in payload", func(b []byte) []byte { return b[:len(b)-3] }, ErrTruncated},
		{"bit flip in payload", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrCorrupt},
		{"bit flip in seq", func(b []byte) []byte { b[5] ^= 0x80; return b }, ErrCorrupt},
		{"bit flip in crc", func(b []byte) []byte { b[13] ^= 4; return b }, ErrCorrupt},
		{"huge length", func(b []byte) []byte { b[3] = 0xff; return b }, ErrCorrupt},
		{"length past buffer", func(b []byte) []byte { b[0] += 50; return b }, ErrTruncated},
		{"zero header", func(b []byte) []byte { return make([]byte, 32) }, ErrEndOfEntries},
		{"short zeros", func(b []byte) []byte { return make([]byte, 5) }, ErrEndOfEntries},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.corrupt(append([]byte(nil), good...))
			if _, _, _, err := DecodeEntry(b, 1<<16); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestSegmentHeaderAndTrailer(t *testing.T) {
	b := make([]byte, SegmentHeaderSize)
	SegmentHeader{BaseSeq: 42, Size: 1 << 20}.Encode(b)
	h, err := DecodeSegmentHeader(b)
	if err != nil || h.BaseSeq != 42 || h.Size != 1<<20 {
		t.Fatalf("%+v %v", h, err)
	}
	for i := 0; i < SegmentHeaderSize; i++ {
		d := append([]byte(nil), b...)
		d[i] ^= 0x10
		if _, err := DecodeSegmentHeader(d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flip at byte %d: %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := DecodeSegmentHeader(b[:39]); !errors.Is(err, ErrTruncated) {
		t.Errorf("short header: %v", err)
	}

	tb := make([]byte, TrailerSize)
	Trailer{LastSeq: 99, DataEnd: 4096, DataCRC: 0xdeadbeef}.Encode(tb)
	tr, err := DecodeTrailer(tb)
	if err != nil || tr.LastSeq != 99 || tr.DataEnd != 4096 || tr.DataCRC != 0xdeadbeef {
		t.Fatalf("%+v %v", tr, err)
	}
	if _, err := DecodeTrailer(make([]byte, TrailerSize)); !errors.Is(err, ErrEndOfEntries) {
		t.Errorf("unsealed trailer: %v", err)
	}
	tb[20] ^= 1
	if _, err := DecodeTrailer(tb); !errors.Is(err, ErrCorrupt) {
		t.Errorf("flipped trailer: %v", err)
	}

	Trailer{LastSeq: 7, DataEnd: 512, DataCRC: 3, Closed: true}.Encode(tb)
	if tr, err := DecodeTrailer(tb); err != nil || !tr.Closed || tr.LastSeq != 7 || tr.DataEnd != 512 || tr.DataCRC != 3 {
		t.Fatalf("clean-close mark: %+v %v", tr, err)
	}
	for i := 0; i < TrailerSize; i++ {
		d := append([]byte(nil), tb...)
		d[i] ^= 0x10
		if tr, err := DecodeTrailer(d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("clean-close mark, flip at byte %d: %+v, %v, want ErrCorrupt", i, tr, err)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(AppendEntry(nil, 1, []byte("seed")), 1<<16)
	f.Add(make([]byte, 20), 16)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1<<30)
	f.Fuzz(func(t *testing.T, b []byte, maxBody int) {
		seq, payload, n, err := DecodeEntry(b, maxBody)
		if err != nil {
			return
		}
		if seq == 0 || n != EncodedLen(len(payload)) || n > len(b) || len(payload) > maxBody {
			t.Fatalf("accepted seq %d n %d payload %d of %d bytes (max %d)", seq, n, len(payload), len(b), maxBody)
		}
		if re := AppendEntry(nil, seq, payload); !bytes.Equal(re, b[:n]) {
			t.Fatal("re-encoding differs from the decoded bytes")
		}
	})
}

func FuzzDecodeSegmentHeader(f *testing.F) {
	b := make([]byte, SegmentHeaderSize)
	SegmentHeader{BaseSeq: 1, Size: 1 << 20}.Encode(b)
	f.Add(b)
	b = make([]byte, SegmentHeaderSize)
	SegmentHeader{BaseSeq: 9, Size: 1 << 20, Reusable: true}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeSegmentHeader(b)
		if err != nil {
			return
		}
		re := make([]byte, SegmentHeaderSize)
		h.Encode(re)
		if !bytes.Equal(re, b[:SegmentHeaderSize]) {
			t.Fatal("re-encoding differs")
		}
	})
}

func FuzzDecodeTrailer(f *testing.F) {
	b := make([]byte, TrailerSize)
	Trailer{LastSeq: 5, DataEnd: 100, DataCRC: 7}.Encode(b)
	f.Add(b)
	b = make([]byte, TrailerSize)
	Trailer{LastSeq: 5, DataEnd: 100, DataCRC: 7, Closed: true}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := DecodeTrailer(b)
		if err != nil {
			return
		}
		re := make([]byte, TrailerSize)
		tr.Encode(re)
		if !bytes.Equal(re, b[:TrailerSize]) {
			t.Fatal("re-encoding differs")
		}
	})
}
