package ringstore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/ringstore/ringstore"
)

func TestCorruptSentinel(t *testing.T) {
	a := ringstore.NewCorruptSentinel("a: corrupt")
	b := ringstore.NewCorruptSentinel("b: corrupt")
	wrapped := fmt.Errorf("%w: entry 3 checksum", a)
	if !errors.Is(wrapped, a) || !errors.Is(wrapped, ringstore.ErrCorrupt) || !ringstore.IsCorrupt(wrapped) {
		t.Fatalf("%v: not a and ErrCorrupt", wrapped)
	}
	if errors.Is(wrapped, b) {
		t.Fatalf("%v is b, another package's sentinel", wrapped)
	}
	if got := wrapped.Error(); got != "a: corrupt: entry 3 checksum" {
		t.Fatalf("message %q", got)
	}
	if ringstore.IsCorrupt(errors.New("a: corrupt")) || ringstore.IsCorrupt(nil) {
		t.Fatal("an unmarked error or nil counted as corruption")
	}
}

func TestMarkCorrupt(t *testing.T) {
	if ringstore.MarkCorrupt(nil) != nil {
		t.Fatal("MarkCorrupt(nil) is not nil")
	}
	pe := &fs.PathError{Op: "decode", Path: "/x/y", Err: fs.ErrInvalid}
	m := fmt.Errorf("kv: log entry 7: %w", ringstore.MarkCorrupt(pe))
	if !ringstore.IsCorrupt(m) {
		t.Fatalf("%v: not corrupt", m)
	}
	var got *fs.PathError
	if !errors.As(m, &got) || got != pe || !errors.Is(m, fs.ErrInvalid) {
		t.Fatalf("%v: the marked error's chain is lost", m)
	}
	if m.Error() != "kv: log entry 7: decode /x/y: invalid argument" {
		t.Fatalf("message %q", m.Error())
	}
	s := ringstore.NewCorruptSentinel("s")
	if ringstore.MarkCorrupt(s) != s {
		t.Fatal("an error that is already corruption was wrapped again")
	}
}

func TestCorruptError(t *testing.T) {
	for _, c := range []struct {
		e    ringstore.CorruptError
		want string
	}{
		{ringstore.CorruptError{Path: "/d/000001.sst", Offset: 4096, What: "block checksum"}, "/d/000001.sst: offset 4096: block checksum"},
		{ringstore.CorruptError{Path: "/d/000001.sst", Offset: 0, What: "bad magic"}, "/d/000001.sst: offset 0: bad magic"},
		{ringstore.CorruptError{Path: "/d/ck-1", Offset: -1, What: "short meta"}, "/d/ck-1: short meta"},
		{ringstore.CorruptError{Offset: 7, What: "bad key length"}, "offset 7: bad key length"},
		{ringstore.CorruptError{Offset: -1, What: "bad value"}, "bad value"},
		{ringstore.CorruptError{Path: "/x", Offset: -1}, "/x: corrupt data"},
	} {
		e := c.e
		if got := e.Error(); got != c.want {
			t.Errorf("%+v: message %q, want %q", c.e, got, c.want)
		}
		wrapped := fmt.Errorf("reading: %w", &e)
		if !errors.Is(wrapped, ringstore.ErrCorrupt) || !ringstore.IsCorrupt(wrapped) {
			t.Errorf("%v: not ErrCorrupt", wrapped)
		}
		var got *ringstore.CorruptError
		if !errors.As(wrapped, &got) || got != &e {
			t.Errorf("%v: errors.As does not find the *CorruptError", wrapped)
		}
	}
	var got *ringstore.CorruptError
	if errors.As(ringstore.MarkCorrupt(errors.New("x")), &got) || errors.As(ringstore.NewCorruptSentinel("s"), &got) {
		t.Error("a marked error or a sentinel, with no path or offset, gave a *CorruptError")
	}
}
