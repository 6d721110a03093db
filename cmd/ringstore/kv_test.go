package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/kv/sstable"
)

// kvTableStore writes n keys to a new store through the kv package with a
// small memtable, flushed into tables, and returns its directory.
func kvTableStore(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(testdir.Direct(t), "store")
	db, err := kv.Open(dir, kv.Options{MemtableSize: 64 << 10, IOMode: ioengine.Syscall, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var b kv.Batch
	for i := range n {
		b.Put(fmt.Appendf(nil, "key%05d", i), fmt.Appendf(nil, "value %d", i))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return out
}

// TestKVPutGetDeleteScan: a store made from the command line, read back on
// every backend and read path.
func TestKVPutGetDeleteScan(t *testing.T) {
	dir := filepath.Join(testdir.Direct(t), "store")
	mustCLI(t, "kv", "put", dir, "b", "two")
	mustCLI(t, "kv", "put", dir, "a", "one")
	mustCLI(t, "kv", "put", "--io-mode", "syscall", dir, "c", "three")
	mustCLI(t, "kv", "put", dir, "bin\x00key", "\x01\xffvalue")
	mustCLI(t, "kv", "put", dir, "k=v", `"quoted"`)
	mustCLI(t, "kv", "put", dir, "d", "to be deleted")
	mustCLI(t, "kv", "delete", dir, "d")
	mustCLI(t, "kv", "delete", dir, "never-there") // deleting an absent key is no error
	flags := [][]string{nil, {"--io-mode", "uring"}, {"--io-mode", "syscall", "--no-cache"}, {"--buffered"}, {"--no-cache"}}
	for _, f := range flags {
		if out := mustCLI(t, append([]string{"kv", "get", dir, "b"}, f...)...); out != "two\n" {
			t.Errorf("get b %v: %q, want %q", f, out, "two\n")
		}
		if out := mustCLI(t, append([]string{"kv", "get", dir, "bin\x00key"}, f...)...); out != `"\x01\xffvalue"`+"\n" {
			t.Errorf("get of a binary value %v: %q", f, out)
		}
		want := "a=one\nb=two\n\"bin\\x00key\"=\"\\x01\\xffvalue\"\nc=three\n\"k=v\"=\"\\\"quoted\\\"\"\n"
		if out := mustCLI(t, append([]string{"kv", "scan", dir}, f...)...); out != want {
			t.Errorf("scan %v:\n%s\nwant:\n%s", f, out, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "b"}, "b=two\n\"bin\\x00key\"=\"\\x01\\xffvalue\"\nc=three\n\"k=v\"=\"\\\"quoted\\\"\"\n"},
		{[]string{"--to", "b"}, "a=one\n"},
		{[]string{"--from", "b", "--to", "c"}, "b=two\n\"bin\\x00key\"=\"\\x01\\xffvalue\"\n"},
		{[]string{"--limit", "2"}, "a=one\nb=two\n"},
		{[]string{"--from", "c", "--limit", "1"}, "c=three\n"},
		{[]string{"--from", "x"}, ""},
		{[]string{"--from", "b", "--to", "b"}, ""},
	} {
		if out := mustCLI(t, append([]string{"kv", "scan", dir}, c.args...)...); out != c.want {
			t.Errorf("scan %v: %q, want %q", c.args, out, c.want)
		}
	}
	code, out, stderr := runCLI("kv", "get", dir, "d")
	if code != 1 || out != "" || !strings.Contains(stderr, `key d not found`) {
		t.Errorf("get of a deleted key: exit %d, stdout %q, stderr %q; want exit 1 and not found", code, out, stderr)
	}
	out = mustCLI(t, "kv", "stat", dir)
	for _, want := range []string{"store " + dir, "options: memtable_size=", "sync=true", "backend ", "last seq 8;", "L0 ", "writes 0 in 0 commits", "block cache:"} {
		if !strings.Contains(out, want) {
			t.Errorf("stat does not print %q:\n%s", want, out)
		}
	}
	if out := mustCLI(t, "kv", "stat", dir, "--no-cache", "--io-mode", "syscall"); !strings.Contains(out, "cache=off") || !strings.Contains(out, "backend syscall") || !strings.Contains(out, "block cache: off") {
		t.Errorf("stat --no-cache --io-mode syscall:\n%s", out)
	}
}

// TestKVTables: get and scan of a store whose keys are in tables, on every
// backend and read path.
func TestKVTables(t *testing.T) {
	const n = 3000
	dir := kvTableStore(t, n)
	out := mustCLI(t, "kv", "stat", dir)
	if strings.Contains(out, "\nL0          0 ") && strings.Contains(out, "\nL1          0 ") {
		t.Fatalf("the store has no tables:\n%s", out)
	}
	for _, f := range [][]string{{"--io-mode", "uring"}, {"--io-mode", "syscall"}, {"--no-cache"}, {"--buffered"}} {
		if out := mustCLI(t, append([]string{"kv", "get", dir, "key01234"}, f...)...); out != "value 1234\n" {
			t.Errorf("get %v: %q", f, out)
		}
		out := mustCLI(t, append([]string{"kv", "scan", dir, "--from", "key00100", "--limit", "2000"}, f...)...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2000 || lines[0] != "key00100=value 100" || lines[1999] != "key02099=value 2099" {
			t.Errorf("scan %v: %d lines, first %q, last %q", f, len(lines), lines[0], lines[len(lines)-1])
		}
		if code, _, stderr := runCLI(append([]string{"kv", "get", dir, "key99999"}, f...)...); code != 1 || !strings.Contains(stderr, "not found") {
			t.Errorf("get of a missing key %v: exit %d, %s", f, code, stderr)
		}
	}
}

func TestKVHelp(t *testing.T) {
	for _, args := range [][]string{{"kv", "help"}, {"kv", "--help"}} {
		code, out, _ := runCLI(args...)
		if code != 0 || !strings.Contains(out, "ringstore kv <command> DIR") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	if code, out, stderr := runCLI("kv", "scan", "--help"); code != 0 || !strings.Contains(out, "-limit") || stderr != "" {
		t.Errorf("kv scan --help: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, _ := runCLI("help"); code != 0 || !strings.Contains(out, "ringstore kv stat|get|put|delete|scan") {
		t.Errorf("help does not list kv: %q", out)
	}
}

func TestKVBadArguments(t *testing.T) {
	store := kvTableStore(t, 10)
	empty := t.TempDir()
	notStore := t.TempDir()
	if err := os.WriteFile(filepath.Join(notStore, "data.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(empty, "missing")
	file := filepath.Join(notStore, "data.txt")
	runCLICases(t, []cliCase{
		{"no command", []string{"kv"}, 2, "kv: no command given"},
		{"unknown command", []string{"kv", "frob", store}, 2, `kv: unknown command "frob"`},
		{"no dir", []string{"kv", "stat"}, 2, "kv stat: missing DIR"},
		{"get no key", []string{"kv", "get", store}, 2, "kv get: missing KEY"},
		{"put no value", []string{"kv", "put", store, "k"}, 2, "kv put: missing VALUE"},
		{"put no key", []string{"kv", "put", store}, 2, "kv put: missing KEY"},
		{"delete no key", []string{"kv", "delete", store}, 2, "kv delete: missing KEY"},
		{"get extra", []string{"kv", "get", store, "k", "extra"}, 2, `kv get: unexpected argument "extra"`},
		{"stat extra", []string{"kv", "stat", store, "extra"}, 2, `kv stat: unexpected argument "extra"`},
		{"scan extra", []string{"kv", "scan", store, "k"}, 2, `kv scan: unexpected argument "k"`},
		{"bad io mode", []string{"kv", "stat", store, "--io-mode", "turbo"}, 2, "kv stat: --io-mode:"},
		{"unknown flag", []string{"kv", "get", store, "k", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"scan-only flag on get", []string{"kv", "get", store, "k", "--limit", "3"}, 2, "flag provided but not defined: -limit"},
		{"negative limit", []string{"kv", "scan", store, "--limit", "-1"}, 2, "--limit must not be negative"},
		{"bad limit", []string{"kv", "scan", store, "--limit", "many"}, 2, "invalid value"},
		{"from after to", []string{"kv", "scan", store, "--from", "z", "--to", "a"}, 2, `--from "z" sorts after --to "a"`},
		{"missing dir", []string{"kv", "get", missing, "k"}, 2, missing},
		{"dir is a file", []string{"kv", "stat", file}, 2, "is not a directory"},
		{"put into a file", []string{"kv", "put", file, "k", "v"}, 2, "is not a directory"},
		{"empty dir", []string{"kv", "stat", empty}, 1, "holds no kv store"},
		{"not a store", []string{"kv", "scan", notStore}, 1, "holds no kv store"},
		{"put into a non-store", []string{"kv", "put", notStore, "k", "v"}, 1, "holds no kv store"},
		{"absent key", []string{"kv", "get", store, "nope"}, 1, "key nope not found"},
	})
	// Nothing above created or changed a store.
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a failed command wrote into %s: %v", empty, ents)
	}
	if _, err := os.Stat(filepath.Join(notStore, "LOCK")); !os.IsNotExist(err) {
		t.Errorf("a failed command made a store in %s: %v", notStore, err)
	}
}

// TestKVLocked: a write on a store another DB has open fails, naming the
// lock, and does not wait; the reads (get, scan, stat) open the store
// read-only, need no lock and work beside it.
func TestKVLocked(t *testing.T) {
	dir := kvTableStore(t, 10)
	db, err := kv.Open(dir, kv.Options{IOMode: ioengine.Syscall, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	code, _, stderr := runCLI("kv", "put", dir, "key00001", "x")
	if code != 1 || !strings.Contains(stderr, "locked") {
		t.Errorf("put on a locked store: exit %d, %s", code, stderr)
	}
	for _, args := range [][]string{{"kv", "get", dir, "key00001"}, {"kv", "scan", dir}, {"kv", "stat", dir}} {
		if code, out, stderr := runCLI(args...); code != 0 || out == "" {
			t.Errorf("%v beside the open store: exit %d, %q, %s", args, code, out, stderr)
		}
	}
}

// TestKVBinaryKeys: with --hex or --base64, keys and values of any bytes
// go in and come out in that encoding, so what scan prints gets them
// back; a bad encoding is a usage error naming the argument.
func TestKVBinaryKeys(t *testing.T) {
	dir := filepath.Join(testdir.Direct(t), "store")
	key, val := "\x00\xff=k\n", "\"\x01\xfe\x00"
	hk, hv := hex.EncodeToString([]byte(key)), hex.EncodeToString([]byte(val))
	bk := base64.StdEncoding.EncodeToString([]byte(key))
	mustCLI(t, "kv", "put", "--hex", dir, hk, hv)
	mustCLI(t, "kv", "put", dir, "plain", "text")
	if out := mustCLI(t, "kv", "get", "--hex", dir, hk); out != hv+"\n" {
		t.Errorf("get --hex: %q, want %q", out, hv)
	}
	if out := mustCLI(t, "kv", "get", "--base64", dir, bk); out != base64.RawStdEncoding.EncodeToString([]byte(val))+"\n" {
		t.Errorf("get --base64: %q", out)
	}
	out := mustCLI(t, "kv", "scan", "--hex", dir)
	want := hk + "=" + hv + "\n" + hex.EncodeToString([]byte("plain")) + "=" + hex.EncodeToString([]byte("text")) + "\n"
	if out != want {
		t.Errorf("scan --hex:\n%s\nwant\n%s", out, want)
	}
	// Every line of scan --base64 reads back with get --base64.
	for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, "kv", "scan", "--base64", dir)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if got := mustCLI(t, "kv", "get", "--base64", dir, k); got != v+"\n" {
			t.Errorf("get --base64 %s: %q, scan said %q", k, got, v)
		}
	}
	if out := mustCLI(t, "kv", "scan", "--hex", dir, "--from", hex.EncodeToString([]byte("p"))); !strings.HasPrefix(out, hex.EncodeToString([]byte("plain"))) || strings.Count(out, "\n") != 1 {
		t.Errorf("scan --hex --from: %q", out)
	}
	mustCLI(t, "kv", "delete", "--base64", dir, bk)
	if code, _, stderr := runCLI("kv", "get", "--hex", dir, hk); code != 1 || !strings.Contains(stderr, "key "+hk+" not found") {
		t.Errorf("get after delete: exit %d, %s", code, stderr)
	}
	runCLICases(t, []cliCase{
		{"bad hex key", []string{"kv", "get", "--hex", dir, "zz"}, 2, `kv get: KEY "zz": not hex`},
		{"bad hex value", []string{"kv", "put", "--hex", dir, "00", "0"}, 2, `kv put: VALUE "0": not hex`},
		{"bad base64", []string{"kv", "delete", "--base64", dir, "!!"}, 2, `kv delete: KEY "!!": not standard base64`},
		{"bad --from", []string{"kv", "scan", "--hex", dir, "--from", "x"}, 2, `kv scan: --from "x": not hex`},
		{"both", []string{"kv", "get", "--hex", "--base64", dir, "00"}, 2, "--hex and --base64 exclude each other"},
	})
}

// TestKVJSONReports: get of a missing key answers JSON saying so and exits
// 1; stat --json carries every figure the text shows; the reads name their
// backend in --json and with -v.
func TestKVJSONReports(t *testing.T) {
	dir := kvTableStore(t, 200)
	code, out, stderr := runCLI("kv", "get", dir, "nope", "--json")
	var g map[string]any
	if code != 1 || json.Unmarshal([]byte(out), &g) != nil || g["found"] != false || g["key"] != "nope" || g["backend"] == "" || !strings.Contains(stderr, "key nope not found") {
		t.Errorf("get --json of a missing key: exit %d, %q, %s", code, out, stderr)
	}
	if _, has := g["value"]; has {
		t.Errorf("a missing key's JSON has a value: %v", g)
	}
	code, out, stderr = runCLI("kv", "stat", dir, "--json", "--io-mode", "syscall")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("stat --json: exit %d, %q, %s", code, out, stderr)
	}
	// The text's lines, each figure in the JSON.
	text := mustCLI(t, "kv", "stat", dir, "--io-mode", "syscall")
	for _, k := range []string{"options", "backend", "last_seq", "memtables", "memtable_bytes", "snapshots", "iterators", "levels",
		"writes", "commits", "write_stalls", "gets", "multigets", "multiget_keys", "read_rounds", "block_reads", "uncached_read_calls",
		"block_cache", "flushes", "flushed_bytes", "compactions", "trivial_moves", "compacted_in_bytes", "compacted_out_bytes"} {
		if _, ok := st[k]; !ok {
			t.Errorf("stat --json lacks %q", k)
		}
	}
	if st["backend"] != "syscall" || !strings.Contains(text, "options: "+st["options"].(string)) ||
		!strings.Contains(text, fmt.Sprintf("last seq %v;", st["last_seq"])) {
		t.Errorf("stat --json disagrees with the text:\n%s\n%s", out, text)
	}
	for _, args := range [][]string{{"stat", dir}, {"get", dir, "key00001"}, {"scan", dir, "--limit", "1"}, {"put", dir, "k", "v"}, {"delete", dir, "k"}} {
		code, _, stderr := runCLI(append(append([]string{"kv"}, args...), "-v", "--io-mode", "syscall")...)
		if code != 0 || !strings.Contains(stderr, "kv "+args[0]+": backend syscall") {
			t.Errorf("kv %v -v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestKVVerify: verify reads every block of every table without opening
// the store (no lock: it works beside an open DB); a flipped byte in a
// data block fails it, naming the table and the block's offset.
func TestKVVerify(t *testing.T) {
	dir := kvTableStore(t, 3000)
	db, err := kv.Open(dir, kv.Options{IOMode: ioengine.Syscall, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI("kv", "verify", dir)
	db.Close()
	if code != 0 || !strings.Contains(out, "ok: ") || !strings.Contains(out, "manifest  ok") || !strings.Contains(out, "log       ok") {
		t.Fatalf("verify of a good store beside its DB: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runCLI("kv", "verify", dir, "--json")
	var v kvVerifyJSON
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.OK || len(v.Tables) == 0 || v.Blocks == 0 || v.Backend == "" {
		t.Fatalf("verify --json: exit %d\n%s", code, out)
	}
	table := filepath.Join(dir, v.Tables[0].File)
	// The second data block of the first table, one byte in its middle.
	r, err := sstable.Open(table)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Block(1)
	r.Close()
	data, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	data[h.Offset+h.Len/2] ^= 0x40
	if err := os.WriteFile(table, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI("kv", "verify", dir)
	where := fmt.Sprintf("%s at offset %d", table, h.Offset)
	if code != 1 || !strings.Contains(stderr, where) || !strings.Contains(out, "DAMAGED") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("verify of a damaged table: exit %d, want 1 naming %q\n%s%s", code, where, out, stderr)
	}
	code, out, _ = runCLI("kv", "verify", dir, "--json")
	v = kvVerifyJSON{}
	if code != 1 || json.Unmarshal([]byte(out), &v) != nil || v.OK || v.Damage == nil || v.Damage.File != table || v.Damage.Offset != int64(h.Offset) {
		t.Errorf("verify --json of a damaged table: exit %d\n%s", code, out)
	}
	// A table the manifest lists but is gone.
	if err := os.Remove(table); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("kv", "verify", dir); code != 1 || !strings.Contains(stderr, "the manifest lists "+filepath.Base(table)) {
		t.Errorf("verify with a table missing: exit %d, %s", code, stderr)
	}
}
