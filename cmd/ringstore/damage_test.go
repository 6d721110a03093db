package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
)

// TestDamagedLogIsNeverDroppedSilently is the report's command sequence:
// five puts, each in its own process in real use (each acknowledged before
// the next), then one byte of the first entry flipped. Verify fails naming
// the file, the offset and the entries a cut would lose; get and scan fail
// instead of answering "not found" or an empty store; the segment is left
// byte for byte as it was; repair without --yes is a dry run that says
// what it would cut, with --yes it cuts and says so.
func TestDamagedLogIsNeverDroppedSilently(t *testing.T) {
	db := filepath.Join(testdir.Direct(t), "db")
	for i := 1; i <= 5; i++ {
		if code, _, stderr := runCLI("kv", "put", db, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)); code != 0 {
			t.Fatalf("put %d: exit %d: %s", i, code, stderr)
		}
	}
	seg := filepath.Join(db, "wal", "00000000000000000001.seg")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[60] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runCLI("wal", "verify", filepath.Join(db, "wal"))
	if code != 1 || !strings.Contains(stderr, seg+" at offset 40") || !strings.Contains(stderr, "a cut here would lose entries 1 to 5 (5 entries)") {
		t.Errorf("wal verify: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{{"kv", "get", db, "k5"}, {"kv", "scan", db}, {"kv", "stat", db}, {"kv", "put", db, "k6", "v6"}} {
		code, out, stderr := runCLI(args...)
		if code != 1 || strings.Contains(out, "not found") || !strings.Contains(stderr, "not a torn tail") || !strings.Contains(stderr, seg) {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, out, stderr)
		}
		// The error says how to repair, and each prefix once.
		if !strings.Contains(stderr, "ringstore wal repair "+filepath.Join(db, "wal")+" --yes") ||
			strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "kv: ") || strings.Count(stderr, "wal: ") != 1 || strings.Count(stderr, "ringstore: ") != 1 {
			t.Errorf("%v: the error repeats a prefix or does not say how to repair:\n%s", args, stderr)
		}
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, data) {
		t.Fatal("the damaged segment was changed: the entries after the damage are gone")
	}

	code, out, stderr = runCLI("wal", "repair", filepath.Join(db, "wal"))
	if code != 0 || !strings.Contains(out, "a cut there loses entries 1 to 5 (5 entries)") || !strings.Contains(out, "a dry run: nothing was changed") {
		t.Errorf("wal repair (dry run): exit %d\n%s%s", code, out, stderr)
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, data) {
		t.Fatal("the dry run changed the segment")
	}
	code, out, stderr = runCLI("wal", "repair", "--yes", filepath.Join(db, "wal"))
	if code != 0 || !strings.Contains(out, "entries from seq 1 on were cut") {
		t.Errorf("wal repair --yes: exit %d\n%s%s", code, out, stderr)
	}
}
