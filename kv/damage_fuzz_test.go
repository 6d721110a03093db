package kv

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// damageKeys is how many keys the damaged store's template holds.
const damageKeys = 400

// damageTemplate writes a store that spans every kind of file a store
// keeps: an L1 table (written, then compacted), an L0 table over it with
// overwrites and deletions, and writes only in the log, then closes it
// cleanly, durably (Unsafe.NoSync logs leave no clean-close mark, so
// damage at their end reads as a torn tail). It returns what each key must
// read as (nil: not found).
func damageTemplate(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	db := openTest(tb, dir, config{mode: ioengine.Syscall, opts: corruptOptions()})
	want := map[string][]byte{}
	write := func(b *Batch) {
		tb.Helper()
		if err := db.Write(b); err != nil {
			tb.Fatal(err)
		}
	}
	var b Batch
	for i := range damageKeys {
		v := fmt.Appendf(nil, "first %d %s", i, strings.Repeat("x", i%97))
		b.Put(keyOf(i), v)
		want[string(keyOf(i))] = v
	}
	write(&b)
	if err := db.Compact(); err != nil {
		tb.Fatal(err)
	}
	b = Batch{}
	for i := 0; i < damageKeys; i += 3 {
		v := fmt.Appendf(nil, "second %d", i)
		b.Put(keyOf(i), v)
		want[string(keyOf(i))] = v
	}
	for i := 1; i < damageKeys; i += 7 {
		b.Delete(keyOf(i))
		want[string(keyOf(i))] = nil
	}
	write(&b)
	if err := db.Flush(); err != nil {
		tb.Fatal(err)
	}
	b = Batch{}
	for i := 2; i < damageKeys; i += 11 {
		v := fmt.Appendf(nil, "third %d", i)
		b.Put(keyOf(i), v)
		want[string(keyOf(i))] = v
	}
	b.Delete(keyOf(5))
	want[string(keyOf(5))] = nil
	write(&b)
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return want
}

// FuzzDamagedStore damages one file of a cleanly closed store (one byte
// changed, or the file cut short) and checks what the store promises: Open
// refuses it, or every key reads as it was written; a read that cannot is
// an error. Every such error is damage (ringstore.ErrCorrupt) naming a
// file of the store; no read returns a wrong value or loses a key
// silently, and nothing panics.
func FuzzDamagedStore(f *testing.F) {
	tmpl := f.TempDir()
	want := damageTemplate(f, tmpl)
	tree := treeState(f, tmpl)
	files := slices.Sorted(maps.Keys(tree)) // made relative to tmpl below
	images := make([][]byte, len(files))
	for i, p := range files {
		rel, err := filepath.Rel(tmpl, p)
		if err != nil {
			f.Fatal(err)
		}
		files[i], images[i] = rel, tree[p]
	}
	for i := range files {
		f.Add(uint8(i), uint32(0), uint8(1), false)
		f.Add(uint8(i), uint32(len(images[i])/2), uint8(0x80), false)
		f.Add(uint8(i), uint32(len(images[i])/2)|1<<31, uint8(0x04), false)
		f.Add(uint8(i), uint32(len(images[i])/4)|3<<29, uint8(0x10), false)
		f.Add(uint8(i), uint32(len(images[i])-1), uint8(0xff), false)
		f.Add(uint8(i), uint32(len(images[i])/3), uint8(0), true)
	}
	keys := make([][]byte, 0, damageKeys+1)
	for i := range damageKeys {
		keys = append(keys, keyOf(i))
	}
	keys = append(keys, keyOf(damageKeys)) // never written
	f.Fuzz(func(t *testing.T, file uint8, off uint32, xor uint8, cut bool) {
		dir := t.TempDir()
		target := int(file) % len(files)
		for i, name := range files {
			img := images[i]
			if i == target {
				img = bytes.Clone(img)
				switch {
				case cut:
					img = img[:int(off)%(len(img)+1)]
				case len(img) > 0:
					if xor == 0 {
						xor = 1
					}
					img[int(off)%len(img)] ^= xor
				}
			}
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, img, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		damaged := filepath.Join(dir, files[target])
		checkDamage := func(what string, err error) {
			t.Helper()
			var ce *ringstore.CorruptError
			if !errors.Is(err, ringstore.ErrCorrupt) || !errors.As(err, &ce) || !strings.HasPrefix(ce.Path, dir) {
				t.Fatalf("%s with %s damaged: %v: not damage (ringstore.ErrCorrupt) naming a file of the store", what, damaged, err)
			}
		}
		// The offset's top bits pick the read path: the block cache, or
		// reads into the calls' own buffers (NoBlockCache); pread, or
		// io_uring (a ring per run is slower, so it is the rarer).
		mode := ioengine.Syscall
		if off&(3<<29) == 3<<29 {
			mode = ioengine.URing
		}
		opts := corruptOptions()
		opts.NoBlockCache = off&(1<<31) != 0
		opts.Engine, opts.Logf = testengine.New(t, mode, ioengine.Options{}), func(string, ...any) {}
		db, err := Open(dir, opts)
		if err != nil {
			checkDamage("Open", err)
			return
		}
		defer db.Close()
		for _, k := range keys {
			v, err := db.Get(k)
			if err != nil && !errors.Is(err, ErrNotFound) {
				checkDamage(fmt.Sprintf("Get(%s)", k), err)
				continue
			}
			if w := want[string(k)]; (err == nil) != (w != nil) || !bytes.Equal(v, w) {
				t.Fatalf("Get(%s) with %s damaged: %q, %v; want %q", k, damaged, v, err, w)
			}
		}
		vals, found, err := db.MultiGet(keys)
		if err != nil {
			checkDamage("MultiGet", err)
		} else {
			for i, k := range keys {
				if w := want[string(k)]; found[i] != (w != nil) || !bytes.Equal(vals[i], w) {
					t.Fatalf("MultiGet: %s with %s damaged: %q (found %v); want %q", k, damaged, vals[i], found[i], w)
				}
			}
		}
		it := db.NewIterator(nil, nil)
		n := 0
		for it.Next() {
			if w := want[string(it.Key())]; w == nil || !bytes.Equal(it.Value(), w) {
				it.Close()
				t.Fatalf("iterator with %s damaged: %s = %q, want %q", damaged, it.Key(), it.Value(), w)
			}
			n++
		}
		err = it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			checkDamage("iterator", err)
		} else if live := liveKeys(want); n != live {
			t.Fatalf("iterator with %s damaged: %d keys, want %d", damaged, n, live)
		}
	})
}

func liveKeys(want map[string][]byte) int {
	n := 0
	for _, v := range want {
		if v != nil {
			n++
		}
	}
	return n
}
