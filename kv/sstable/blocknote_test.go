package sstable

import (
	"bytes"
	"fmt"
	"testing"
)

// TestNoteBlock: the note of a block of one restart names exactly the
// cache lines its entries' headers and keys lie in; a block of more
// restarts, of more than Alignment bytes or with an entry that does not
// parse gets none.
func TestNoteBlock(t *testing.T) {
	// Keys share no first byte, so every entry is stored whole: a header
	// of 4 bytes (shared 0, key length < 128, value length 128–16383),
	// then the key, then the value.
	build := func(n, vlen int) (buf []byte, used int, want BlockNote) {
		var b blockBuilder
		off := 0
		for i := range n {
			key := appendKey(nil, InternalKey{UserKey: fmt.Appendf(nil, "%c-key-%d", 'a'+i, i), Seq: 7, Kind: KindSet})
			v := bytes.Repeat([]byte{byte(i)}, vlen+i)
			b.add(key, v)
			keyEnd := off + 4 + len(key)
			for l := off / lineSize; l <= (keyEnd-1)/lineSize; l++ {
				want |= 1 << l
			}
			off = keyEnd + len(v)
		}
		buf, used = b.finish(nil)
		return buf, used, want
	}
	buf, used, want := build(12, 250)
	if len(buf) != Alignment {
		t.Fatalf("test block is %d bytes", len(buf))
	}
	if got := noteBlock(buf, used); got != want || got&1 == 0 {
		t.Fatalf("note %#x, want %#x", got, want)
	}
	// 17 entries: two restarts.
	if buf, used, _ := build(17, 128); len(buf) != Alignment {
		t.Fatalf("test block is %d bytes", len(buf))
	} else if got := noteBlock(buf, used); got != 0 {
		t.Fatalf("block of two restarts: note %#x", got)
	}
	// Larger than a frame.
	if buf, used, _ := build(14, 400); len(buf) == Alignment {
		t.Fatalf("test block is %d bytes", len(buf))
	} else if got := noteBlock(buf, used); got != 0 {
		t.Fatalf("block of %d bytes: note %#x", len(buf), got)
	}
	// An entry whose value runs past the entries.
	bad := bytes.Clone(buf[:Alignment])
	buf, used, _ = build(12, 250)
	copy(bad, buf)
	bad[3] = 0x7f // the first value's length: 127 + 128×(its second byte)
	bad[4] = 0x7f
	if got := noteBlock(bad, used); got != 0 {
		t.Fatalf("block with an entry past its end: note %#x", got)
	}
	// Prefetching reads inside the block whatever the note and used length.
	for _, u := range []int{0, 3, 4, used, Alignment - blockTrailerLen, Alignment} {
		for _, n := range []BlockNote{0, 1, want, ^BlockNote(0)} {
			prefetchBlock(buf, u, n)
			prefetchBlock(buf[:100], u, n)
		}
	}
}
