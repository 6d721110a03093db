package sstable

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// rawEntry is a data block entry as its bytes go: the key bytes it shares
// with the previous entry's, the rest of its key, its value.
type rawEntry struct {
	shared int
	rest   []byte
	value  []byte
}

// rawBlock encodes entries into a sealed data block with one restart, at
// the first entry, whatever the entries say: a block its writer got wrong.
func rawBlock(es []rawEntry) []byte {
	var used []byte
	for _, e := range es {
		used = binary.AppendUvarint(used, uint64(e.shared))
		used = binary.AppendUvarint(used, uint64(len(e.rest)))
		used = binary.AppendUvarint(used, uint64(len(e.value)))
		used = append(used, e.rest...)
		used = append(used, e.value...)
	}
	used = binary.LittleEndian.AppendUint32(used, 0) // the restart at offset 0
	used = binary.LittleEndian.AppendUint32(used, 1) // one restart
	return sealBlock(used)
}

// TestLookupNamesBadEntries checks that a lookup walking a block whose
// entries are wrong, with a good checksum, names the entry and what is
// wrong with it, and still finds what a sound block holds.
func TestLookupNamesBadEntries(t *testing.T) {
	key := func(user string, seq uint64) []byte {
		return appendKey(nil, InternalKey{UserKey: []byte(user), Seq: seq, Kind: KindSet})
	}
	// tail is key minus its first n bytes: what an entry sharing n stores.
	tail := func(k []byte, n int) []byte { return k[n:] }
	k05, k04, k05new, k05old := key("key05", 7), key("key04", 7), key("key05", 9), key("key05", 3)
	for _, c := range []struct {
		name string
		es   []rawEntry
		look string
		want string // "" : found
	}{
		{"sound, a prefix shared", []rawEntry{{0, k04, []byte("a")}, {4, tail(k05, 4), []byte("b")}}, "key05", ""},
		{"sound, an older version after", []rawEntry{{0, k05, []byte("a")}, {5, tail(k05old, 5), []byte("b")}}, "key05", ""},
		{"restart shares", []rawEntry{{1, tail(k05, 1), nil}}, "key05", "restart entry 0 shares 1 key bytes"},
		{"shares past the previous key", []rawEntry{{0, k04, nil}, {40, tail(k05, 4), nil}}, "key05", "entry 1: shares more key bytes than the previous key has"},
		{"user key out of order past the prefix", []rawEntry{{0, k05, nil}, {4, tail(k04, 4), nil}}, "key06", `entry 1: key "key04"#7,set does not sort after "key05"#7,set`},
		{"user key out of order, nothing shared", []rawEntry{{0, k05, nil}, {0, k04, nil}}, "key06", "does not sort after"},
		{"a newer version after an older", []rawEntry{{0, k05, nil}, {5, tail(k05new, 5), nil}}, "key06", `entry 1: key "key05"#9,set does not sort after "key05"#7,set`},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf := rawBlock(c.es)
			got, _, err := lookupInBlock(buf, site{"raw", 0}, []byte(c.look), MaxSeq, 0)
			if c.want == "" {
				if err != nil || !got.Found {
					t.Fatalf("lookup of %s in a sound block = %+v, %v", c.look, got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("lookup of %s = %+v, %v; want an error naming %q", c.look, got, err, c.want)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != "raw" {
				t.Fatalf("error %v is not a *CorruptError naming the file", err)
			}
		})
	}
}
