package state

import (
	"errors"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestTypedStates: typed values and lists round-trip through a commit and
// a Load; a Lookup serves Get, Put and Clear of its entry; a Lookup of
// another state, an empty one, and bytes the codec cannot decode are
// errors naming what is wrong.
func TestTypedStates(t *testing.T) {
	b := openTest(t, testdir.Direct(t), ioengine.URing, nil)
	defer b.Close()
	count, err := NewValue(b, "count", 0, Int64Codec)
	if err != nil {
		t.Fatal(err)
	}
	names, err := NewList(b, "names", 0, StringCodec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewValue(b, "names", 0, Int64Codec); !errors.Is(err, ErrIncompatible) {
		t.Errorf("a list's name as a typed value: %v", err)
	}
	mb := b.NewMiniBatch()
	for round := range 3 {
		lc := count.Want(mb, []byte("auction-7"), nil)
		ln := names.Want(mb, []byte("auction-7"), []byte("w1"))
		if err := mb.Load(); err != nil {
			t.Fatal(err)
		}
		n, ok, err := count.Get(mb, lc)
		if err != nil || ok != (round > 0) || n != int64(round) {
			t.Fatalf("round %d: count %d %v %v", round, n, ok, err)
		}
		if err := count.Put(mb, lc, n+1); err != nil {
			t.Fatal(err)
		}
		if err := names.Add(mb, ln, "bid"); err != nil {
			t.Fatal(err)
		}
		got, err := names.Get(mb, ln)
		if err != nil || len(got) != round+1 || got[round] != "bid" {
			t.Fatalf("round %d: list %q %v", round, got, err)
		}
		if err := mb.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	lc := count.Want(mb, []byte("auction-7"), nil)
	if _, _, err := count.Get(mb, Lookup{}); err == nil {
		t.Error("an empty lookup was taken")
	}
	if _, err := names.Get(mb, lc); err == nil {
		t.Error("a lookup of the count was taken by the list")
	}
	raw, _ := b.Value("raw", 0)
	if err := raw.Put(mb, []byte("k"), nil, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	asInt, err := NewValue(b, "raw", 0, Int64Codec)
	if err != nil {
		t.Fatal(err)
	}
	l := asInt.Want(mb, []byte("k"), nil)
	if err := mb.Load(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := asInt.Get(mb, l); !errors.Is(err, ErrBadValue) {
		t.Errorf("3 bytes as an int64: %v, want ErrBadValue", err)
	}
	if err := count.Clear(mb, count.At([]byte("auction-7"), nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := count.Get(mb, count.At([]byte("auction-7"), nil)); ok {
		t.Error("a cleared value is still there")
	}
}
