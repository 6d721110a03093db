package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/crc32c"
)

func TestStableEncodeDecode(t *testing.T) {
	for _, m := range []map[string][]byte{
		{},
		{"CurrentTerm": {0, 0, 0, 0, 0, 0, 0, 3}},
		{"a": {}, "b": []byte("value"), "": []byte("empty key"), "LastVoteCand": []byte("127.0.0.1:1234")},
	} {
		got, err := decodeStable(encodeStable(m))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(got, m, bytes.Equal) {
			t.Errorf("got %q, want %q", got, m)
		}
	}
}

// reCRC recomputes the trailing CRC so a test reaches the checks after it.
func reCRC(b []byte) []byte {
	end := len(b) - 4
	binary.LittleEndian.PutUint32(b[end:], crc32c.Checksum(b[:end]))
	return b
}

func TestStableDecodeRejects(t *testing.T) {
	good := encodeStable(map[string][]byte{"a": []byte("1"), "b": []byte("22")})
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"short", good[:12], "truncated"},
		{"magic", mut(func(b []byte) []byte { b[0] = 'X'; return b }), "magic"},
		{"crc", mut(func(b []byte) []byte { b[17]++; return b }), "CRC32C"},
		{"cut", good[:len(good)-3], "CRC32C"},
		{"version", mut(func(b []byte) []byte { b[8] = 9; return reCRC(b) }), "unknown version 9"},
		{"count huge", mut(func(b []byte) []byte { b[15] = 0x7f; return reCRC(b) }), "cannot fit"},
		{"count low", mut(func(b []byte) []byte { b[12] = 1; return reCRC(b) }), "bytes after the last entry"},
		{"count high", mut(func(b []byte) []byte { b[12] = 3; return reCRC(b) }), "3 entries cannot fit"},
		{"key length", mut(func(b []byte) []byte { b[16] = 100; return reCRC(b) }), "entry 0 key: length 100"},
		{"value length", mut(func(b []byte) []byte { b[21] = 100; return reCRC(b) }), "entry 0 value: length 100"},
		{"order", mut(func(b []byte) []byte { b[20] = 'c'; return reCRC(b) }), "not after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeStable(tc.b)
			if err == nil {
				t.Fatal("decoded")
			}
			if !errors.Is(err, errBadStable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want errBadStable and %q", err, tc.want)
			}
		})
	}
}

// TestStableCorruptFileFailsOpen: a damaged stable.db is an error naming
// the file, never a panic and never an empty store.
func TestStableCorruptFileFailsOpen(t *testing.T) {
	dir := newDir(t)
	s := openStore(t, dir)
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, stableName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, img := range map[string][]byte{
		"truncated": b[:len(b)-2],
		"flipped":   func() []byte { c := bytes.Clone(b); c[20] ^= 1; return c }(),
		"zeroed":    make([]byte, len(b)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, img, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, testWALOptions())
			if err == nil {
				s.Close()
				t.Fatal("opened a store with a corrupt stable file")
			}
			if !strings.Contains(err.Error(), path) || !errors.Is(err, errBadStable) {
				t.Errorf("error %q does not name %s or wrap errBadStable", err, path)
			}
		})
	}
	// A leftover temporary file (a crash before the rename) is ignored and
	// removed; the old file stands.
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stableTmpName), []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Errorf("GetUint64 = %d, %v after a leftover temp file; want 7", v, err)
	}
	if _, err := os.Stat(filepath.Join(dir, stableTmpName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover %s still there: %v", stableTmpName, err)
	}
}

func TestStableStore(t *testing.T) {
	dir := newDir(t)
	s := openStore(t, dir)
	if v, err := s.Get([]byte("missing")); err == nil || err.Error() != "not found" || v != nil {
		t.Errorf("Get(missing) = %q, %v; want nil, \"not found\"", v, err)
	}
	if v, err := s.GetUint64([]byte("missing")); err == nil || err.Error() != "not found" || v != 0 {
		t.Errorf("GetUint64(missing) = %d, %v; want 0, \"not found\"", v, err)
	}
	val := []byte("127.0.0.1:9999")
	if err := s.Set([]byte("LastVoteCand"), val); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X' // the store kept a copy
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 43); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("LastVoteCand")); err == nil || !strings.Contains(err.Error(), "not a uint64") {
		t.Errorf("GetUint64 of a 14-byte value: %v", err)
	}
	check := func(s *Store) {
		t.Helper()
		if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "127.0.0.1:9999" {
			t.Errorf("Get(LastVoteCand) = %q, %v", v, err)
		}
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 43 {
			t.Errorf("GetUint64(CurrentTerm) = %d, %v", v, err)
		}
		if v, err := s.Get([]byte("empty")); err != nil || v == nil || len(v) != 0 {
			t.Errorf("Get(empty) = %#v, %v; want an empty non-nil slice", v, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("CurrentTerm")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if err := s.Set([]byte("x"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Set after Close: %v", err)
	}
	check(openStore(t, dir))
}

// TestStableSetFailureIsPermanent: once a write of the stable file failed,
// no later Set is attempted.
func TestStableSetFailureIsPermanent(t *testing.T) {
	dir := newDir(t)
	s := openStore(t, dir)
	if err := s.SetUint64([]byte("k"), 1); err != nil {
		t.Fatal(err)
	}
	// A directory where the temporary file must go makes the write fail.
	if err := os.Mkdir(filepath.Join(dir, stableTmpName), 0o755); err != nil {
		t.Fatal(err)
	}
	err := s.SetUint64([]byte("k"), 2)
	if err == nil {
		t.Fatal("Set succeeded with its temporary file blocked")
	}
	if err := os.Remove(filepath.Join(dir, stableTmpName)); err != nil {
		t.Fatal(err)
	}
	if err2 := s.SetUint64([]byte("k"), 3); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Set after a failure: %v; want the first error %v", err2, err)
	}
	if v, err := s.GetUint64([]byte("k")); err != nil || v != 1 {
		t.Errorf("GetUint64 = %d, %v; want the last durable value 1", v, err)
	}
}

// FuzzDecodeStable: decoding never panics; whatever decodes re-encodes to
// the same bytes (the encoding is canonical); and a map built from the
// input survives encode and decode.
func FuzzDecodeStable(f *testing.F) {
	f.Add(encodeStable(map[string][]byte{"CurrentTerm": {0, 0, 0, 0, 0, 0, 0, 1}}), "k", []byte("v"))
	f.Add(encodeStable(map[string][]byte{}), "", []byte{})
	f.Add([]byte("RSRAFTKV\x01\x00\x00\x00"), "LastVoteCand", []byte("node"))
	f.Fuzz(func(t *testing.T, b []byte, k string, v []byte) {
		m, err := decodeStable(b)
		if err == nil {
			if re := encodeStable(m); !bytes.Equal(re, b) {
				t.Fatalf("re-encoding %x gives %x", b, re)
			}
		} else if !errors.Is(err, errBadStable) {
			t.Fatalf("error %v does not wrap errBadStable", err)
		}
		x := map[string][]byte{k: v, k + "2": []byte(k)}
		got, err := decodeStable(encodeStable(x))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(got, x, bytes.Equal) {
			t.Fatalf("got %q, want %q", got, x)
		}
	})
}
