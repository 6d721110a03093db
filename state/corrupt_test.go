package state

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestDecodersReportCorruption: every decoder of stored keys, values,
// lists and timers says damaged bytes are corruption (ringstore.IsCorrupt),
// its own sentinel still holding where it has one, and its message still
// saying what was wrong.
func TestDecodersReportCorruption(t *testing.T) {
	key := appendPrefix(nil, 3, 7, []byte("auction-1"), []byte("w"))
	badLen := append(binary.BigEndian.AppendUint16(nil, 3), 0, 7, 0x80) // a uvarint cut short
	timer := binary.BigEndian.AppendUint32(appendPrefix(nil, 3, 7, []byte("k"), nil), 1)
	for _, c := range []struct {
		name     string
		err      error
		sentinel error
		msg      string
	}{
		{"key of 3 bytes", second(DecodeKey(key[:3])), ErrBadKey, "shorter than the 4-byte id"},
		{"key with a bad length", second(DecodeKey(badLen)), ErrBadKey, "bad key length at offset 4"},
		{"key cut inside its namespace", second(DecodeKey(key[:len(key)-1])), ErrBadKey, "bad namespace length"},
		{"timer with 4 bytes of time", second(timerTS(timer)), ErrBadKey, "4 bytes of time"},
		{"value of 5 bytes", third(decodeValue(make([]byte, 5))), nil, "a stored value of 5 bytes"},
		{"list with an item past its end", second(decodeList([]byte{2, 'a', 5, 'b'})), nil, "a list item's length is damaged"},
		{"int64 of 3 bytes", second(Int64Codec.Decode([]byte("abc"))), ErrBadValue, "an int64 of 3 bytes"},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !ringstore.IsCorrupt(c.err) {
			t.Errorf("%s: %v is not corruption", c.name, c.err)
		}
		if c.sentinel != nil && !errors.Is(c.err, c.sentinel) {
			t.Errorf("%s: %v is not %v", c.name, c.err, c.sentinel)
		}
		if !strings.Contains(c.err.Error(), c.msg) {
			t.Errorf("%s: %q does not say %q", c.name, c.err, c.msg)
		}
		if c.sentinel == nil {
			var ce *ringstore.CorruptError
			if !errors.As(c.err, &ce) || ce.Path != "" || ce.Offset != -1 || ce.Error() != c.err.Error() {
				t.Errorf("%s: %v as a *ringstore.CorruptError: %+v, want no path and offset -1", c.name, c.err, ce)
			}
		}
	}
	if _, err := DecodeKey(key); err != nil {
		t.Fatalf("an intact key: %v", err)
	}
}

func third[T, U any](_ T, _ U, err error) error { return err }

// TestCodecErrorIsCorrupt: a typed state's Get returns what its codec says
// of the stored bytes marked as corruption, the codec's error still in the
// chain.
func TestCodecErrorIsCorrupt(t *testing.T) {
	b := openTest(t, testdir.Direct(t), ioengine.Syscall, nil)
	defer b.Close()
	raw, err := b.Value("v", 0)
	if err != nil {
		t.Fatal(err)
	}
	items, err := b.List("l", 0)
	if err != nil {
		t.Fatal(err)
	}
	mb := b.NewMiniBatch()
	if err := raw.Put(mb, []byte("k"), nil, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := items.Add(mb, []byte("k"), nil, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	v, err := NewValue(b, "v", 0, refuseCodec{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewList(b, "l", 0, refuseCodec{})
	if err != nil {
		t.Fatal(err)
	}
	lv, ll := v.Want(mb, []byte("k"), nil), l.Want(mb, []byte("k"), nil)
	if err := mb.Load(); err != nil {
		t.Fatal(err)
	}
	_, _, verr := v.Get(mb, lv)
	_, lerr := l.Get(mb, ll)
	for what, err := range map[string]error{"value": verr, "list": lerr} {
		if !ringstore.IsCorrupt(err) || !errors.Is(err, errRefused) {
			t.Errorf("%s: %v: not corruption wrapping the codec's error", what, err)
		}
	}
}

var errRefused = errors.New("refuse: not mine")

type refuseCodec struct{}

func (refuseCodec) Append(dst []byte, v int) []byte { return dst }
func (refuseCodec) Decode(b []byte) (int, error)    { return 0, errRefused }

// TestDamagedRegistry: Open of state whose registry record or key-group
// count is damaged fails with a *ringstore.CorruptError naming the
// directory.
func TestDamagedRegistry(t *testing.T) {
	for _, c := range []struct {
		name string
		key  []byte
		msg  string
	}{
		{"registry", registryKey("x"), `the registry record of "x" is damaged`},
		{"key groups", keyGroupsKey, "the record of the key-group count is damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testdir.Direct(t)
			b := openTest(t, dir, ioengine.Syscall, nil)
			if err := b.db.Put(c.key, []byte{1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b2, err := Open(dir, Options{})
			if err == nil {
				b2.Close()
				t.Fatal("Open of damaged state succeeded")
			}
			var ce *ringstore.CorruptError
			if !errors.As(err, &ce) || ce.Path != dir || ce.Offset != -1 || !strings.Contains(ce.What, c.msg) {
				t.Fatalf("Open: %v: as a *ringstore.CorruptError %+v, want %s and %q", err, ce, dir, c.msg)
			}
			if want := "state: " + dir + ": " + ce.What; err.Error() != want {
				t.Errorf("Open: %q, want %q", err, want)
			}
		})
	}
}
