package arrowscan_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
)

func genWithSidecar(t *testing.T) string {
	t.Helper()
	paths, err := events.Generate(t.TempDir(), events.GenOptions{Rows: 20_000, RowsPerBatch: 4096, Seed: 3, Sidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	return paths[0]
}

// TestSidecarCatchesWhatCheckCannot: a flipped byte in a record batch's
// body, read without the sidecar's checks, still decodes and the query
// still equals the reference computed from the same bytes, but
// VerifySidecar names the batch, its offset and the two checksums, and a
// scan with the checks fails.
func TestSidecarCatchesWhatCheckCannot(t *testing.T) {
	path := genWithSidecar(t)
	rep, err := arrowscan.VerifySidecar(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if rep.Bytes != st.Size() || rep.Records != 5 || rep.Blocks != rep.Records+rep.Dictionary {
		t.Fatalf("report %+v for a file of %d bytes in 5 batches", rep, st.Size())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := arrowscan.ParseFooter(f, st.Size(), path)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := ft.RecordBatches[2]
	data, _ := os.ReadFile(path)
	data[b.BodyOffset()+40] ^= 0x01 // a timestamp's low bit: still a valid file
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Checked against the sidecar as it is read, the scan fails: the
	// chunk holding the byte does not match.
	if err := scanOnce(path, arrowscan.Options{Mode: arrowscan.ModePread}); !errors.Is(err, ringstore.ErrCorrupt) || !strings.Contains(err.Error(), "its checksum sidecar says") {
		t.Fatalf("a scan checked against the sidecar: %v, want a corruption error", err)
	}
	file, err := arrowscan.Open(path, arrowscan.Options{Mode: arrowscan.ModePread, SkipSidecarCheck: true})
	if err != nil {
		t.Fatalf("the flipped file no longer opens: %v", err)
	}
	res, err := events.Run([]*arrowscan.File{file}, "event_summary")
	file.Close()
	if err != nil {
		t.Fatalf("query over the flipped file: %v", err)
	}
	ref, err := events.Reference([]string{path}, "event_summary")
	if err != nil || res.Equal(ref) != nil {
		t.Fatalf("the engine and the reference disagree (%v): --check would have caught it", err)
	}
	_, err = arrowscan.VerifySidecar(path)
	var ce *arrowscan.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ringstore.ErrCorrupt) || ce.Part != "record batch 2" || ce.Offset != b.Offset ||
		!strings.Contains(err.Error(), "its sidecar says") {
		t.Fatalf("VerifySidecar of a flipped body byte: %v", err)
	}
}

func TestSidecarErrors(t *testing.T) {
	path := genWithSidecar(t)
	side := path + arrowscan.SidecarSuffix
	orig, _ := os.ReadFile(side)
	for _, c := range []struct {
		name   string
		damage func()
		want   string
	}{
		{"truncated sidecar", func() { os.WriteFile(side, orig[:len(orig)-7], 0o644) }, "need"},
		{"flipped sidecar", func() { b := bytes.Clone(orig); b[40] ^= 1; os.WriteFile(side, b, 0o644) }, "checksum"},
		{"not a sidecar", func() { os.WriteFile(side, []byte("hello, this is not a sidecar at all, really"), 0o644) }, "magic"},
		{"another file's size", func() {
			data, _ := os.ReadFile(path)
			os.WriteFile(path, append(data, 0), 0o644)
		}, "its sidecar describes a file of"},
		{"no sidecar", func() { os.Remove(side) }, "no checksum sidecar"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, _ := os.ReadFile(path)
			defer func() { os.WriteFile(side, orig, 0o644); os.WriteFile(path, data, 0o644) }()
			c.damage()
			if _, err := arrowscan.VerifySidecar(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%v, want an error naming %s and %q", err, path, c.want)
			}
		})
	}
	if _, err := arrowscan.VerifySidecar(path); err != nil {
		t.Fatalf("restored: %v", err)
	}
	os.Remove(side)
	if _, err := arrowscan.VerifySidecar(path); !errors.Is(err, arrowscan.ErrNoSidecar) {
		t.Errorf("no sidecar: %v", err)
	}
}

// FuzzDecodeSidecar: any bytes decode to a sidecar or to a *CorruptError,
// never a panic; what decodes encodes back to the same bytes.
func FuzzDecodeSidecar(f *testing.F) {
	f.Add(arrowscan.EncodeSidecar(arrowscan.Sidecar{FileSize: 100, RestCRC: 7,
		Entries: []arrowscan.SidecarEntry{{Kind: 1, Index: 0, Block: arrowscan.Block{Offset: 8, MetaLen: 16, BodyLen: 40}, CRC: 9}}}))
	f.Add(arrowscan.EncodeSidecar(arrowscan.Sidecar{FileSize: 5000, ChunkSize: 4096, Chunks: []uint32{1, 2},
		Entries: []arrowscan.SidecarEntry{{Kind: 0, Index: 0, Block: arrowscan.Block{Offset: 8, MetaLen: 16, BodyLen: 4000}, CRC: 3}}}))
	f.Add(arrowscan.EncodeSidecar(arrowscan.Sidecar{}))
	f.Add([]byte("RSARCRC1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := arrowscan.DecodeSidecar(b, "fuzz.crc")
		if err != nil {
			var ce *arrowscan.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "fuzz.crc") {
				t.Fatalf("%v is not a *CorruptError naming the file", err)
			}
			return
		}
		if got := arrowscan.EncodeSidecar(s); !bytes.Equal(got, b) {
			t.Fatalf("decoded and encoded again: %x, was %x", got, b)
		}
	})
}
