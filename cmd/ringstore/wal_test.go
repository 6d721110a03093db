package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/wal"
)

const (
	testEntries    = 400
	testPayloadLen = 400
)

// testPayload is entry seq's payload: printable, testPayloadLen bytes.
func testPayload(seq uint64) []byte {
	p := []byte(fmt.Sprintf("entry %04d ", seq))
	for len(p) < testPayloadLen {
		p = append(p, byte('a'+(seq+uint64(len(p)))%26))
	}
	return p
}

// testLog builds a closed log of testEntries entries in 64 KiB segments
// (three sealed and an active one) and returns its directory and segment
// files.
func testLog(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{SegmentSize: 64 << 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	batch := make([][]byte, 0, 50)
	for seq := uint64(1); seq <= testEntries; seq++ {
		batch = append(batch, testPayload(seq))
		if len(batch) == cap(batch) {
			if _, err := l.AppendBatch(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil || len(segs) < 3 {
		t.Fatalf("want at least 3 segments, have %v (%v)", segs, err)
	}
	return dir, segs
}

// snapshot is every file name in dir with a hash of its contents and its
// modification time.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := e.Info()
		fmt.Fprintf(&b, "%s %x %v\n", e.Name(), sha256.Sum256(data), info.ModTime().UnixNano())
	}
	return b.String()
}

// entryOffset is where entry seq of the first segment starts.
func entryOffset(seq uint64) int64 {
	return wal.SegmentHeaderSize + int64(seq-1)*int64(wal.EncodedLen(testPayloadLen))
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func TestWALReadOnlyCommands(t *testing.T) {
	dir, segs := testLog(t)
	before := snapshot(t, dir)

	code, out, stderr := runCLI("wal", "verify", dir)
	if code != 0 {
		t.Fatalf("verify: exit %d: %s", code, stderr)
	}
	for _, want := range []string{filepath.Base(segs[0]), "1..", "sealed", "active", "first seq  1", fmt.Sprintf("last seq   %d", testEntries), "\nok\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output does not mention %q:\n%s", want, out)
		}
	}

	code, out, stderr = runCLI("wal", "verify", "--json", dir)
	if code != 0 {
		t.Fatalf("verify --json: exit %d: %s", code, stderr)
	}
	var v verifyJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	var n uint64
	for i, s := range v.Segments {
		n += s.Entries
		if s.Name != filepath.Base(segs[i]) || s.Sealed != (i < len(segs)-1) || s.Size != 64<<10 {
			t.Errorf("segment %d: %+v", i, s)
		}
	}
	if !v.OK || v.FirstSeq != 1 || v.LastSeq != testEntries || n != testEntries || len(v.Segments) != len(segs) {
		t.Errorf("verify --json: %+v", v)
	}

	code, out, stderr = runCLI("wal", "stat", dir, "--json")
	if code != 0 {
		t.Fatalf("stat --json: exit %d: %s", code, stderr)
	}
	var s statJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stat --json: %v\n%s", err, out)
	}
	if !s.OK || s.Segments != len(segs) || s.Sealed != len(segs)-1 || s.Active != 1 || s.Entries != testEntries ||
		s.FirstSeq != 1 || s.LastSeq != testEntries || s.BytesOnDisk != int64(len(segs))<<16 ||
		s.EntryBytes != testEntries*int64(wal.EncodedLen(testPayloadLen)) || s.SegmentSize != 64<<10 {
		t.Errorf("stat --json: %+v", s)
	}
	code, out, _ = runCLI("wal", "stat", dir)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d (seq 1..%d)", testEntries, testEntries)) || !strings.Contains(out, "1 active") {
		t.Errorf("stat: exit %d:\n%s", code, out)
	}

	// Hex, the default: capped at 32 bytes, across a segment boundary.
	code, out, stderr = runCLI("wal", "dump", dir, "--from", "150", "--to", "170")
	if code != 0 {
		t.Fatalf("dump: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 21 {
		t.Fatalf("dump --from 150 --to 170 printed %d lines:\n%s", len(lines), out)
	}
	if want := fmt.Sprintf("seq=150 len=%d %x… (+%d bytes)", testPayloadLen, testPayload(150)[:32], testPayloadLen-32); lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[20], "seq=170 ") {
		t.Errorf("last line %q", lines[20])
	}

	code, out, _ = runCLI("wal", "dump", "--format", "text", "--max-bytes", "0", "--limit", "3", dir)
	want := fmt.Sprintf("seq=1 len=%d %s\nseq=2 len=%d %s\nseq=3 len=%d %s\n", testPayloadLen, testPayload(1), testPayloadLen, testPayload(2), testPayloadLen, testPayload(3))
	if code != 0 || out != want {
		t.Errorf("dump --format text: exit %d:\n%s\nwant\n%s", code, out, want)
	}

	code, out, stderr = runCLI("wal", "dump", dir, "--format", "json", "--from", "390")
	if code != 0 {
		t.Fatalf("dump --format json: exit %d: %s", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	next := uint64(390)
	for dec.More() {
		var e walEntry
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e.Seq != next || e.Len != testPayloadLen || !bytes.Equal(e.Payload, testPayload(e.Seq)) || e.Segment != filepath.Base(segs[len(segs)-1]) {
			t.Fatalf("json entry %+v, want seq %d", e, next)
		}
		next++
	}
	if next != testEntries+1 {
		t.Errorf("json dump ended before seq %d", next)
	}

	code, out, stderr = runCLI("wal", "dump", dir, "--from", "1000")
	if code != 0 || out != "" || !strings.Contains(stderr, "no entries from seq 1000 on (the log holds 1..400)") {
		t.Errorf("dump past the end: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	if after := snapshot(t, dir); after != before {
		t.Errorf("read-only commands changed the directory:\nbefore\n%s\nafter\n%s", before, after)
	}
}

func TestWALCorruptSealedSegment(t *testing.T) {
	dir, segs := testLog(t)
	const bad = 11 // seq of the damaged entry, in the first segment
	off := entryOffset(bad)
	flipByte(t, segs[0], off+wal.EntryHeaderSize+20)
	before := snapshot(t, dir)

	code, out, stderr := runCLI("wal", "verify", dir)
	where := fmt.Sprintf("%s at offset %d", segs[0], off)
	if code != 1 || !strings.Contains(stderr, where) || !strings.Contains(stderr, "checksum") || !strings.Contains(out, where) {
		t.Errorf("verify of a damaged log: exit %d, want 1 naming %q\nstdout:\n%s\nstderr:\n%s", code, where, out, stderr)
	}
	code, out, _ = runCLI("wal", "verify", "--json", dir)
	var v verifyJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 || v.OK || v.Damage == nil || v.Damage.File != segs[0] || v.Damage.Offset != off || v.Damage.LastSeq != bad-1 {
		t.Errorf("verify --json of a damaged log: exit %d, %v, %+v", code, err, v.Damage)
	}
	code, out, _ = runCLI("wal", "stat", dir)
	if code != 1 || !strings.Contains(out, where) {
		t.Errorf("stat of a damaged log: exit %d:\n%s", code, out)
	}

	code, out, stderr = runCLI("wal", "dump", dir, "--format", "json")
	if code != 1 || strings.Count(out, "\n") != bad-1 || !strings.Contains(stderr, where) || !strings.Contains(stderr, "stopped after 10 entries") {
		t.Errorf("dump of a damaged log: exit %d, %d lines, stderr %q", code, strings.Count(out, "\n"), stderr)
	}
	code, out, _ = runCLI("wal", "dump", dir, "--to", "5")
	if code != 0 || strings.Count(out, "\n") != 5 {
		t.Errorf("dump before the damage: exit %d:\n%s", code, out)
	}

	code, out, stderr = runCLI("wal", "repair", dir)
	if code != 0 || !strings.Contains(out, "a dry run: nothing was changed") || !strings.Contains(out, where) ||
		!strings.Contains(out, segs[0]+": ") || !strings.Contains(out, fmt.Sprintf("would seal it after seq %d", bad-1)) ||
		!strings.Contains(out, segs[1]+": wal: corrupt: segments do not follow") || !strings.Contains(out, fmt.Sprintf("entries from seq %d on would be cut", bad)) {
		t.Errorf("repair without --yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("read-only commands changed the directory:\nbefore\n%s\nafter\n%s", before, after)
	}

	code, out, stderr = runCLI("wal", "repair", "--yes", dir)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("sealed it after seq %d", bad-1)) || !strings.Contains(out, "removed "+segs[len(segs)-1]) ||
		!strings.Contains(out, fmt.Sprintf("entries from seq %d on were cut; the log now ends at seq %d", bad, bad-1)) {
		t.Errorf("repair --yes: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	code, out, stderr = runCLI("wal", "verify", dir)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("last seq   %d\nok\n", bad-1)) {
		t.Errorf("verify after repair: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI("wal", "repair", "--yes", "--json", dir)
	var r repairJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || len(r.Actions) != 0 || !r.VerifiedOK || r.LastSeqAfter != bad-1 {
		t.Errorf("repair of a good log: exit %d, %v, %+v", code, err, r)
	}
	l, err := wal.Open(dir, wal.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("open after repair: %v", err)
	}
	if got := l.LastSeq(); got != bad-1 {
		t.Errorf("last seq after repair %d, want %d", got, bad-1)
	}
	l.Close()
}

// A torn tail of the active segment is not damage: verify and stat report
// it, dump stops before it.
func TestWALTornTail(t *testing.T) {
	dir, segs := testLog(t)
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := wal.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	end := v.Segments[len(v.Segments)-1].DataEnd
	if _, err := f.WriteAt([]byte("torn!"), end+3); err != nil {
		t.Fatal(err)
	}
	f.Close()

	code, out, stderr := runCLI("wal", "verify", dir)
	if code != 0 || !strings.Contains(out, "torn tail of 8 bytes") || !strings.Contains(out, "\nok\n") {
		t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI("wal", "stat", "--json", dir)
	var s statJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 || s.TornTail != 8 || s.LastSeq != testEntries {
		t.Errorf("stat: exit %d, %v, %+v", code, err, s)
	}
	code, out, stderr = runCLI("wal", "dump", dir, "--from", "399")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(stderr, fmt.Sprintf("torn tail at offset %d after seq %d", end, testEntries)) {
		t.Errorf("dump: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

func TestWALBadArguments(t *testing.T) {
	dir, _ := testLog(t)
	empty := t.TempDir()
	missing := filepath.Join(empty, "missing")
	file := filepath.Join(empty, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []cliCase{
		{"no command", []string{"wal"}, 2, "wal: no command given"},
		{"unknown command", []string{"wal", "fsck", dir}, 2, `wal: unknown command "fsck"`},
		{"missing dir", []string{"wal", "verify"}, 2, "missing DIR"},
		{"missing dir with flags", []string{"wal", "dump", "--limit", "3"}, 2, "missing DIR"},
		{"extra argument", []string{"wal", "stat", dir, "extra"}, 2, `unexpected argument "extra"`},
		{"unknown flag", []string{"wal", "verify", dir, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"nonexistent dir", []string{"wal", "verify", missing}, 2, missing},
		{"dir is a file", []string{"wal", "stat", file}, 2, file + " is not a directory"},
		{"no log", []string{"wal", "dump", empty}, 1, "holds no log"},
		{"repair no log", []string{"wal", "repair", "--yes", empty}, 1, "holds no log"},
		{"bad from", []string{"wal", "dump", dir, "--from", "ten"}, 2, `--from: "ten" is not a sequence number`},
		{"zero from", []string{"wal", "dump", dir, "--from", "0"}, 2, "sequence numbers start at 1"},
		{"negative to", []string{"wal", "dump", dir, "--to", "-5"}, 2, `--to: "-5" is not a sequence number`},
		{"from after to", []string{"wal", "dump", dir, "--from", "9", "--to", "3"}, 2, "--from 9 is after --to 3"},
		{"negative limit", []string{"wal", "dump", dir, "--limit", "-1"}, 2, "--limit must not be negative"},
		{"bad format", []string{"wal", "dump", dir, "--format", "yaml"}, 2, `--format "yaml"`},
	}
	runCLICases(t, cases)
	// Without --yes, repair is a dry run: exit 0 on a healthy log too.
	if code, out, stderr := runCLI("wal", "repair", dir); code != 0 || !strings.Contains(out, "repair would change nothing") || stderr != "" {
		t.Errorf("repair dry run of a healthy log: exit %d\n%s%s", code, out, stderr)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 1 {
		t.Errorf("commands wrote into a directory without a log: %v", entries)
	}
	for _, args := range [][]string{{"wal", "help"}, {"wal", "--help"}} {
		if code, out, _ := runCLI(args...); code != 0 || !strings.Contains(out, "wal verify") && !strings.Contains(out, "verify DIR") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	if code, out, stderr := runCLI("wal", "dump", "--help"); code != 0 || !strings.Contains(out, "usage: ringstore wal dump DIR") || stderr != "" {
		t.Errorf("wal dump --help: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, _ := runCLI("help"); code != 0 || !strings.Contains(out, "ringstore wal verify") {
		t.Errorf("the usage text does not mention wal:\n%s", out)
	}
}

// Every kind of damage: verify names it, repair without --yes says what it
// would do and changes nothing, repair --yes leaves a log that verifies
// and opens.
func TestWALRepairKinds(t *testing.T) {
	cases := []struct {
		name     string
		damage   func(t *testing.T, segs []string)
		plan     string // in the dry run's output
		lastSeq  uint64 // after repair
		lostFrom string // in repair's output
	}{
		{"missing middle segment", func(t *testing.T, segs []string) { os.Remove(segs[1]) },
			"ends at seq 150; would remove it", 150, "entries from seq 301 on were cut"},
		{"bad trailer", func(t *testing.T, segs []string) { flipByte(t, segs[0], 64<<10-wal.TrailerSize+3) },
			"would seal it after seq 150", testEntries, "no entry lost"},
		{"bad header", func(t *testing.T, segs []string) { flipByte(t, segs[1], 2) },
			"wal: corrupt: segment header", 150, "entries from seq 151 on were cut"},
		{"bad meta", func(t *testing.T, segs []string) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(segs[0]), walMetaName), []byte("garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "would rewrite it with first seq 1", testEntries, "no entry lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, segs := testLog(t)
			c.damage(t, segs)
			if code, out, stderr := runCLI("wal", "verify", dir); code != 1 || !strings.Contains(stderr, "at offset") {
				t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
			}
			before := snapshot(t, dir)
			if code, out, _ := runCLI("wal", "repair", dir); code != 0 || !strings.Contains(out, c.plan) {
				t.Errorf("repair without --yes (a dry run): exit %d, want 0 and %q in\n%s", code, c.plan, out)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("repair without --yes changed the directory")
			}
			if code, out, stderr := runCLI("wal", "repair", dir, "--yes"); code != 0 || !strings.Contains(out, c.lostFrom) {
				t.Errorf("repair --yes: exit %d, want %q in\n%s%s", code, c.lostFrom, out, stderr)
			}
			code, out, stderr := runCLI("wal", "stat", "--json", dir)
			var s statJSON
			if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 || !s.OK || s.LastSeq != c.lastSeq {
				t.Errorf("stat after repair: exit %d, %v, %+v %s", code, err, s, stderr)
			}
		})
	}
}

// TestWALAppend: wal append makes the log and appends each value as an
// entry, durably; flags may come anywhere, "--" ends them.
func TestWALAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	code, out, stderr := runCLI("wal", "append", dir, "first", "--json", "second")
	if code != 0 || !strings.Contains(out, `"seqs": [`) || !strings.Contains(out, "1,") || !strings.Contains(out, "2") {
		t.Fatalf("append: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := runCLI("wal", "append", dir, "--", "--third"); code != 0 || out != "appended seq 3\n" {
		t.Fatalf("append after --: exit %d, %q", code, out)
	}
	code, out, _ = runCLI("wal", "dump", dir, "--format", "text")
	if code != 0 || !strings.Contains(out, "seq=1 len=5 first") || !strings.Contains(out, "seq=2 len=6 second") || !strings.Contains(out, "seq=3 len=7 --third") {
		t.Errorf("dump after append:\n%s", out)
	}
	runCLICases(t, []cliCase{
		{"no value", []string{"wal", "append", dir}, 2, "no VALUE to append"},
		{"no dir", []string{"wal", "append"}, 2, "missing DIR"},
		{"bad flag", []string{"wal", "append", dir, "x", "--bogus"}, 2, "flag provided but not defined: -bogus"},
	})
}

// TestWALStatDamagedCountsSegments: stat of a log damaged in its first
// segment still counts every segment file and their bytes, and reports the
// damage (text and JSON); the error names the file once, its prefix once.
func TestWALStatDamagedCountsSegments(t *testing.T) {
	dir, segs := testLog(t)
	off := entryOffset(11)
	flipByte(t, segs[0], off+wal.EntryHeaderSize+20)
	code, out, stderr := runCLI("wal", "stat", dir, "--json")
	var s statJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 1 {
		t.Fatalf("stat --json: exit %d, %v\n%s", code, err, out)
	}
	var onDisk int64
	for _, p := range segs {
		fi, _ := os.Stat(p)
		onDisk += fi.Size()
	}
	if fi, err := os.Stat(filepath.Join(dir, walMetaName)); err == nil {
		onDisk += fi.Size()
	}
	if s.Segments != len(segs) || s.SegmentsRead != 0 || s.Damage == nil || s.Damage.File != segs[0] || s.Damage.Offset != off ||
		s.BytesOnDisk != onDisk || s.OldestSegment != filepath.Base(segs[0]) || s.NewestSegment != filepath.Base(segs[len(segs)-1]) || s.Backend == "" {
		t.Errorf("stat --json of a damaged log: %+v (want %d segments, %d bytes)", s, len(segs), onDisk)
	}
	if strings.Count(stderr, "wal:") > 0 || strings.Count(stderr, segs[0]) != 1 {
		t.Errorf("stat's error repeats a prefix or the file: %s", stderr)
	}
	code, out, _ = runCLI("wal", "stat", dir)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("segments       %d:", len(segs))) || !strings.Contains(out, "damage") {
		t.Errorf("stat of a damaged log: exit %d\n%s", code, out)
	}
}

// TestWALJSONAndBackend: dump takes --json (one object a line, the same as
// --format json); every wal command says its backend in --json and with -v.
func TestWALJSONAndBackend(t *testing.T) {
	dir, _ := testLog(t)
	code, out, stderr := runCLI("wal", "dump", dir, "--json", "--limit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var e walEntry
	if code != 0 || len(lines) != 3 || json.Unmarshal([]byte(lines[2]), &e) != nil || e.Seq != 3 || string(e.Payload) != string(testPayload(3)) {
		t.Errorf("dump --json: exit %d, %q, %s", code, out, stderr)
	}
	if code, _, stderr := runCLI("wal", "dump", dir, "--json", "--format", "hex"); code != 2 || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("dump --json --format hex: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"verify", dir}, {"stat", dir}, {"repair", dir}, {"dump", dir, "--limit", "1"}} {
		code, _, stderr := runCLI(append([]string{"wal", "-v"}, args...)...)
		if code != 2 {
			t.Errorf("wal -v %v: -v before the command is no flag of wal: exit %d", args, code)
		}
		code, _, stderr = runCLI(append(append([]string{"wal"}, args...), "-v")...)
		if code != 0 || !strings.Contains(stderr, "backend syscall (read-only") {
			t.Errorf("wal %v -v: exit %d, stderr %q", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"verify", dir}, {"stat", dir}, {"repair", dir}} {
		_, out, _ := runCLI(append(append([]string{"wal"}, args...), "--json")...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil || m["backend"] == nil || m["backend"] == "" {
			t.Errorf("wal %v --json names no backend: %v\n%s", args, err, out)
		}
	}
	app := t.TempDir()
	code, out, stderr = runCLI("wal", "append", app, "y", "--json", "-v")
	var a struct {
		Seqs    []uint64 `json:"seqs"`
		Backend string   `json:"backend"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || len(a.Seqs) != 1 || a.Backend == "" || !strings.Contains(stderr, "wal append: backend "+a.Backend) {
		t.Errorf("wal append --json -v: exit %d, %q, %s", code, out, stderr)
	}
}

// After a clean close the last segment carries the clean-close mark: verify
// says so, and a flipped byte in the last entry is damage (exit 1, naming
// the file, the offset and the entry a cut would lose), not a torn tail.
func TestWALCleanCloseDamage(t *testing.T) {
	dir, segs := testLog(t)
	last := segs[len(segs)-1]
	code, out, stderr := runCLI("wal", "verify", dir)
	if code != 0 || !strings.Contains(out, "active, closed cleanly") {
		t.Fatalf("verify of a cleanly closed log: exit %d\n%s%s", code, out, stderr)
	}
	v, err := wal.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := v.Segments[len(v.Segments)-1]
	off := s.DataEnd - int64(wal.EncodedLen(testPayloadLen))
	flipByte(t, last, off+wal.EntryHeaderSize+10)
	code, out, stderr = runCLI("wal", "verify", dir)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("damage     %s at offset %d", last, off)) ||
		!strings.Contains(stderr, "closed cleanly") || !strings.Contains(stderr, fmt.Sprintf("would lose entries %d to %d (1 entries)", testEntries, testEntries)) {
		t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI("wal", "verify", "--json", dir)
	var j verifyJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 1 || j.OK || j.Damage == nil || j.Damage.Offset != off || j.Damage.LostFirst != testEntries {
		t.Errorf("verify --json: exit %d, %v, %+v", code, err, j)
	}
}
