package state

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// TestRegistrationKindAndTTL: a name is one state: registering it again as
// another kind or with another TTL is ErrIncompatible, in the same backend
// and after a reopen; the same kind and TTL get the same state.
func TestRegistrationKindAndTTL(t *testing.T) {
	dir := testdir.Direct(t)
	b := openTest(t, dir, ioengine.URing, nil)
	if _, err := b.Value("v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := b.List("l", 0); err != nil {
		t.Fatal(err)
	}
	check := func(b *Backend, when string) {
		t.Helper()
		for _, c := range []struct {
			what string
			err  error
		}{
			{"v as a list", second(b.List("v", time.Minute))},
			{"v as a map", second(b.Map("v", time.Minute))},
			{"v as a reducing state", second(b.Reducing("v", time.Minute, func(a, _ []byte) []byte { return a }))},
			{"v with another TTL", second(b.Value("v", time.Hour))},
			{"v without its TTL", second(b.Value("v", 0))},
			{"l as a value", second(b.Value("l", 0))},
		} {
			if !errors.Is(c.err, ErrIncompatible) {
				t.Errorf("%s: %s: %v, want ErrIncompatible", when, c.what, c.err)
			}
		}
		v1, err1 := b.Value("v", time.Minute)
		l1, err2 := b.List("l", 0)
		if err1 != nil || err2 != nil || v1.id == l1.id {
			t.Errorf("%s: the same registrations again: %v, %v", when, err1, err2)
		}
	}
	check(b, "open")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openTest(t, dir, ioengine.URing, nil)
	defer b.Close()
	check(b, "reopened")
}

func second[T any](_ T, err error) error { return err }

// TestMaxKeyGroupsRecorded: the key-group count is recorded with the state;
// opening or restoring it with another is ErrIncompatible, and a zero
// MaxKeyGroups takes the recorded one.
func TestMaxKeyGroupsRecorded(t *testing.T) {
	root := testdir.Direct(t)
	live := filepath.Join(root, "live")
	opts := func(n int) Options { return Options{MaxKeyGroups: n, KV: kv.Options{Logf: t.Logf}} }
	b, err := Open(live, opts(64))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := b.Value("v", 0)
	mb := b.NewMiniBatch()
	if err := v.Put(mb, []byte("k"), nil, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(mb.Commit(), b.Checkpoint(context.Background(), filepath.Join(root, "ck"), nil), b.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(live, opts(128)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("open with 128 key groups: %v, want ErrIncompatible", err)
	}
	if _, _, err := Restore(filepath.Join(root, "ck"), filepath.Join(root, "r1"), opts(32)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("restore with 32 key groups: %v, want ErrIncompatible", err)
	}
	r, _, err := Restore(filepath.Join(root, "ck"), filepath.Join(root, "r2"), opts(0))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.MaxKeyGroups() != 64 {
		t.Errorf("restored with MaxKeyGroups 0: %d key groups, want the recorded 64", r.MaxKeyGroups())
	}
	rv, _ := r.Value("v", 0)
	if got, ok, err := rv.Get(r.NewMiniBatch(), []byte("k"), nil); !ok || string(got) != "x" {
		t.Errorf("k after the restore: %q %v %v", got, ok, err)
	}
}

// TestCheckpointIsWholeOrAbsent: a checkpoint is built under a hidden name
// and renamed into place; what a crash during one leaves (the hidden
// directory, half made) is not a checkpoint, does not stop the next one to
// the same name, and IsCheckpoint tells a whole one from a directory
// without its manifest.
func TestCheckpointIsWholeOrAbsent(t *testing.T) {
	root := testdir.Direct(t)
	b := openTest(t, filepath.Join(root, "live"), ioengine.URing, nil)
	defer b.Close()
	ck := filepath.Join(root, "ck-1")
	partial := PartialCheckpoint(ck)
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "000007.sst"), []byte("half a table"), 0o644); err != nil {
		t.Fatal(err)
	}
	if IsCheckpoint(partial) {
		t.Error("a half-made checkpoint counts as one")
	}
	if err := b.Checkpoint(context.Background(), ck, []byte("m")); err != nil {
		t.Fatal(err)
	}
	if !IsCheckpoint(ck) {
		t.Error("the checkpoint is not whole")
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the hidden directory is still there: %v", err)
	}
	if err := b.Checkpoint(context.Background(), ck, nil); err == nil {
		t.Error("a checkpoint over an existing one succeeded")
	}
}

// TestWritesReportErrors: after Close every call returns ErrClosed — Put
// and Clear included; with StrictReads a Get of an entry not wanted, or
// wanted and not loaded yet, is ErrNotWanted, and one loaded or written is
// not; a write between a key's Want and the Load is what the batch keeps.
func TestWritesReportErrors(t *testing.T) {
	dir := testdir.Direct(t)
	b, err := Open(dir, Options{StrictReads: true, KV: kv.Options{Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := b.Value("v", 0)
	l, _ := b.List("l", 0)
	m, _ := b.Map("m", 0)
	mb := b.NewMiniBatch()
	if _, _, err := v.Get(mb, []byte("a"), nil); !errors.Is(err, ErrNotWanted) {
		t.Errorf("strict Get of a key not wanted: %v, want ErrNotWanted", err)
	}
	v.Want(mb, []byte("b"), nil)
	if err := mb.Load(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := v.Get(mb, []byte("b"), nil); ok || err != nil {
		t.Errorf("strict Get of a wanted key: %v %v", ok, err)
	}
	if err := v.Put(mb, []byte("c"), nil, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := v.Get(mb, []byte("c"), nil); !ok || err != nil || string(got) != "x" {
		t.Errorf("strict Get of a written key: %q %v %v", got, ok, err)
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	// Wanted, not loaded yet: not readable; written before the Load: the
	// Load keeps the write, and the Commit writes it.
	v.Want(mb, []byte("c"), nil)
	if _, _, err := v.Get(mb, []byte("c"), nil); !errors.Is(err, ErrNotWanted) || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("strict Get of a key wanted, before the Load: %v, want ErrNotWanted naming the Load", err)
	}
	if err := v.Put(mb, []byte("c"), nil, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := mb.Load(); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := v.Get(mb, []byte("c"), nil); !ok || err != nil || string(got) != "y" {
		t.Errorf("Get of a key wanted, then written before the Load: %q %v %v, want the write", got, ok, err)
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	v.Want(mb, []byte("c"), nil)
	if err := mb.Load(); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := v.Get(mb, []byte("c"), nil); !ok || err != nil || string(got) != "y" {
		t.Errorf("Get after the Commit of a write made before a Load: %q %v %v, want it", got, ok, err)
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Put":        v.Put(mb, []byte("k"), nil, []byte("x")),
		"Clear":      v.Clear(mb, []byte("k"), nil),
		"List.Add":   l.Add(mb, []byte("k"), nil, []byte("x")),
		"List.Clear": l.Clear(mb, []byte("k"), nil),
		"Map.Put":    m.Put(mb, []byte("k"), nil, []byte("u"), []byte("x")),
		"Map.Delete": m.Delete(mb, []byte("k"), nil, []byte("u")),
		"Load":       mb.Load(),
		"Commit":     mb.Commit(),
		"Checkpoint": b.Checkpoint(context.Background(), filepath.Join(t.TempDir(), "ck"), nil),
		"register":   second(b.Value("w", 0)),
		"Close":      b.Close(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", what, err)
		}
	}
}

// FuzzDecodeRegistration: a registry record decodes to a registration
// that encodes back to it, or is refused; a 2-byte record is one written
// before kinds were recorded.
func FuzzDecodeRegistration(f *testing.F) {
	f.Add(registration{id: 3, kind: KindList, ttl: time.Minute}.encode())
	f.Add([]byte{0, 7})
	f.Add([]byte{0, 1, 9, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := decodeRegistration(b)
		if !ok {
			return
		}
		if len(b) == 2 {
			if r.kind != kindUnrecorded {
				t.Fatalf("%x: kind %s from a 2-byte record", b, r.kind)
			}
			return
		}
		if again := r.encode(); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, r, again)
		}
	})
}
