package raftstore

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func logsEqual(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt) && a.AppendedAt.IsZero() == b.AppendedAt.IsZero()
}

func TestCodecRoundTrip(t *testing.T) {
	now := time.Now()
	for _, l := range []raft.Log{
		{Index: 1},
		{Index: 7, Term: 3, Type: raft.LogNoop, AppendedAt: now},
		{Index: 1 << 40, Term: 1<<64 - 1, Type: raft.LogCommand, Data: []byte("hello"), Extensions: []byte{1, 2, 3}},
		{Index: 9, Term: 2, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{0xAB}, 5000), AppendedAt: time.Unix(-1e10, 999999999)},
		{Index: 10, Type: raft.LogType(200), AppendedAt: time.Unix(0, 1)},
	} {
		b := encodeLog(nil, &l)
		if len(b) != encodedLen(&l) {
			t.Errorf("index %d: encoded %d bytes, encodedLen says %d", l.Index, len(b), encodedLen(&l))
		}
		var got raft.Log
		if err := decodeLog(b, l.Index, &got); err != nil {
			t.Fatalf("index %d: %v", l.Index, err)
		}
		if !logsEqual(&l, &got) {
			t.Errorf("round trip: got %+v, want %+v", got, l)
		}
	}
}

func TestCodecRejects(t *testing.T) {
	good := encodeLog(nil, &raft.Log{Index: 5, Term: 2, Data: []byte("abc"), Extensions: []byte("x"), AppendedAt: time.Unix(100, 5)})
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name  string
		b     []byte
		index uint64
		want  string
	}{
		{"empty", nil, 5, "shorter than"},
		{"short", good[:10], 5, "shorter than"},
		{"version", mut(func(b []byte) []byte { b[0] = 2; return b }), 5, "unknown encoding version 2"},
		{"flags", mut(func(b []byte) []byte { b[2] = 0x80 | flagAppendedAt; return b }), 5, "unknown flags"},
		{"reserved", mut(func(b []byte) []byte { b[3] = 1; return b }), 5, "reserved byte"},
		{"index", good, 6, "the entry holds index 5"},
		{"nsec", mut(func(b []byte) []byte { b[28], b[29], b[30], b[31] = 0xff, 0xff, 0xff, 0xff; return b }), 5, "nanoseconds"},
		{"data length", mut(func(b []byte) []byte { b[32] = 200; return b }), 5, "data: length 200"},
		{"truncated", good[:len(good)-1], 5, "extensions: length 1 but 0 bytes left"},
		{"trailing", append(bytes.Clone(good), 0), 5, "1 bytes after the extensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l raft.Log
			err := decodeLog(tc.b, tc.index, &l)
			if err == nil {
				t.Fatal("decoded")
			}
			if !errors.Is(err, errBadLog) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want errBadLog and %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "index ") {
				t.Errorf("error %q does not name the index", err)
			}
		})
	}
}

// FuzzDecodeLog: decoding never panics; whatever decodes re-encodes to the
// same bytes; and decode(encode(x)) == x for a log built from the inputs.
func FuzzDecodeLog(f *testing.F) {
	f.Add(encodeLog(nil, &raft.Log{Index: 1, Term: 1, Data: []byte("x"), AppendedAt: time.Unix(1, 2)}), uint64(1), uint64(1), uint8(0), []byte("data"), []byte{}, int64(0), uint32(0))
	f.Add([]byte{1, 0, 0, 0}, uint64(0), uint64(9), uint8(5), []byte{}, []byte("ext"), int64(1700000000), uint32(123))
	f.Fuzz(func(t *testing.T, b []byte, index, term uint64, typ uint8, data, ext []byte, sec int64, nsec uint32) {
		var l raft.Log
		if err := decodeLog(b, index, &l); err == nil {
			if l.Index != index {
				t.Fatalf("decoded index %d for %d", l.Index, index)
			}
			if re := encodeLog(nil, &l); !bytes.Equal(re, b) {
				t.Fatalf("re-encoding %x gives %x", b, re)
			}
		} else if !errors.Is(err, errBadLog) {
			t.Fatalf("error %v does not wrap errBadLog", err)
		}
		x := raft.Log{Index: index, Term: term, Type: raft.LogType(typ), Data: data, Extensions: ext}
		if sec != 0 || nsec != 0 {
			x.AppendedAt = time.Unix(sec, int64(nsec%1e9))
		}
		var got raft.Log
		if err := decodeLog(encodeLog(nil, &x), index, &got); err != nil {
			t.Fatalf("decode(encode(%+v)): %v", x, err)
		}
		if !logsEqual(&x, &got) {
			t.Fatalf("decode(encode(x)) = %+v, want %+v", got, x)
		}
	})
}
