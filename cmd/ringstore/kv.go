package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/wal"
)

const kvUsage = `usage: ringstore kv <command> DIR [args] [flags]

Read and write the kv store in DIR.
Commands (put and delete take the store's lock and recover its log; the
others open it read-only: no lock, nothing written, beside a running owner):
  stat DIR                     the options in effect and the store's stats: levels, tables, counters
  get DIR KEY                  print KEY's value (exit 1 when it has none)
  put DIR KEY VALUE            set KEY to VALUE, durably (creates the store when DIR has none)
  delete DIR KEY               remove KEY
  scan DIR [--from K] [--to K] [--limit N]
                               print key=value lines in key order, [from, to)
  verify DIR                   read every block of every table and check its checksum, the
                               manifest against the tables, and the log (exit 1 naming file
                               and offset on damage)
Keys and values print as they are when they are printable text, otherwise
(and a key holding '=', or anything starting with '"') as a Go quoted string.
--hex or --base64 (get, put, delete, scan): KEY, VALUE, --from and --to are
given in that encoding and keys and values print in it, so binary keys
round-trip: what 'kv scan --hex DIR' prints, 'kv get --hex DIR KEY' takes.
--base64 prints standard base64 without the '=' padding (a scan line has one
'='); padded input is accepted.
stat, get, scan and verify take --json: stat, get and verify print one JSON
object (get of a missing key: {"key": ..., "found": false}, exit 1), scan one
object per line; a key or value that is not UTF-8 text comes as key_base64
or value_base64 instead of key or value. The JSON of stat, get and verify
names the backend; scan's lines are the data alone (-v names it).
Flags of every command:
  --io-mode auto|uring|sqpoll|syscall   the engine's backend (auto: RINGSTORE_IO_URING)
  --no-cache                            no block cache: every block read goes to the device
  --buffered                            read tables through the page cache, not O_DIRECT
  -v                                    say on stderr which backend ran (and why, after a fallback)
`

// kvCommand is one kv subcommand.
type kvCommand struct {
	name   string
	args   []string // the positional arguments after DIR
	create bool     // may create the store
	read   bool     // only reads: opens the store read-only (no lock, nothing written)
	run    func(db *kv.DB, args []string, f *kvFlags, w io.Writer) error
}

// kvCommands is every kv subcommand (verify runs on the files, not a DB).
var kvCommands = []kvCommand{
	{"stat", nil, false, true, kvStat},
	{"get", []string{"KEY"}, false, true, kvGet},
	{"put", []string{"KEY", "VALUE"}, true, false, kvPut},
	{"delete", []string{"KEY"}, false, false, kvDelete},
	{"scan", nil, false, true, kvScan},
	{"verify", nil, false, true, nil},
}

func kvCommandNames() []string {
	var names []string
	for _, c := range kvCommands {
		names = append(names, c.name)
	}
	return names
}

func cmdKV(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("kv: no command given (%s)", strings.Join(kvCommandNames(), ", "))
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, kvUsage)
		return nil
	}
	var cmd *kvCommand
	for i := range kvCommands {
		if kvCommands[i].name == name {
			cmd = &kvCommands[i]
		}
	}
	if cmd == nil {
		return usagef("kv: unknown command %q (%s)", name, strings.Join(kvCommandNames(), ", "))
	}
	fs := newFlags("kv "+name, stderr)
	synopsis := strings.Join(append([]string{"DIR"}, cmd.args...), " ")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ringstore kv %s %s [flags]\n", name, synopsis)
		fs.PrintDefaults()
	}
	f := &kvFlags{}
	if name != "verify" {
		fs.StringVar(&f.ioMode, "io-mode", "auto", "I/O backend: auto (RINGSTORE_IO_URING), uring, sqpoll or syscall")
		fs.BoolVar(&f.noCache, "no-cache", false, "no block cache: every block read goes to the device")
		fs.BoolVar(&f.buffered, "buffered", false, "read tables through the page cache instead of O_DIRECT")
		fs.BoolVar(&f.verbose, "v", false, "say on stderr which backend the store ran on (and why, after a fallback)")
	}
	if cmd.read {
		fs.BoolVar(&f.json, "json", false, "print JSON instead of text (with the backend)")
	}
	if name != "stat" && name != "verify" {
		fs.BoolVar(&f.hex, "hex", false, "keys and values, in the arguments and the output, in hex")
		fs.BoolVar(&f.b64, "base64", false, "keys and values, in the arguments and the output, in standard base64 (printed without '=' padding)")
	}
	if name == "scan" {
		fs.StringVar(&f.from, "from", "", "first key (inclusive; default: the first key)")
		fs.StringVar(&f.to, "to", "", "end key (exclusive; default: past the last key)")
		fs.IntVar(&f.limit, "limit", 0, "print at most N keys (0: all)")
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "from":
			f.fromSet = true
		case "to":
			f.toSet = true
		}
	})
	label := "kv " + name
	if len(pos) == 0 {
		return usagef("%s: missing DIR, the store's directory", label)
	}
	if want := 1 + len(cmd.args); len(pos) != want {
		if len(pos) < want {
			return usagef("%s: missing %s (usage: ringstore kv %s %s)", label, cmd.args[len(pos)-1], name, synopsis)
		}
		return usagef("%s: unexpected argument %q (usage: ringstore kv %s %s)", label, pos[want], name, synopsis)
	}
	if f.hex && f.b64 {
		return usagef("%s: --hex and --base64 exclude each other", label)
	}
	// Decode the arguments given in --hex or --base64.
	for i, a := range pos[1:] {
		b, err := f.decode(a)
		if err != nil {
			return usagef("%s: %s %q: %v", label, cmd.args[i], a, err)
		}
		pos[1+i] = string(b)
	}
	for _, a := range []struct {
		name string
		v    *string
		set  bool
	}{{"--from", &f.from, f.fromSet}, {"--to", &f.to, f.toSet}} {
		if a.set {
			b, err := f.decode(*a.v)
			if err != nil {
				return usagef("%s: %s %q: %v", label, a.name, *a.v, err)
			}
			*a.v = string(b)
		}
	}
	if f.ioMode == "" {
		f.ioMode = "auto"
	}
	mode, err := ioengine.ParseIOMode(f.ioMode)
	if err != nil {
		return usagef("%s: --io-mode: %v", label, err)
	}
	if f.limit < 0 {
		return usagef("%s: --limit must not be negative, got %d", label, f.limit)
	}
	if f.fromSet && f.toSet && f.from > f.to {
		return usagef("%s: --from %q sorts after --to %q", label, f.from, f.to)
	}
	dir := pos[0]
	if err := checkKVDir(label, dir, cmd.create); err != nil {
		return err
	}
	if name == "verify" {
		return kvVerify(dir, f, stdout)
	}
	opts := kv.Options{IOMode: mode, NoBlockCache: f.noCache, BufferedIO: f.buffered, ReadOnly: cmd.read,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "ringstore: "+format+"\n", args...) }}
	db, err := kv.Open(dir, opts)
	if err != nil {
		return wrapCmd(label, withRepairHint(dir, err))
	}
	if f.verbose {
		fmt.Fprintf(stderr, "ringstore: %s: %s\n", label, backendText(db.Stats().Backend.String(), db.Stats().FallbackCause))
	}
	w := bufio.NewWriter(stdout)
	err = cmd.run(db, pos[1:], f, w)
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return wrapCmd(label, err)
}

// backendText says which backend ran, and why it is not io_uring when the
// engine fell back.
func backendText(backend, reason string) string {
	s := "backend " + backend
	if reason != "" {
		s += " (fell back: " + reason + ")"
	}
	return s
}

// withRepairHint adds to a damaged log's error (a *wal.CorruptError from
// the store's log) the command that cuts the log at the damage.
func withRepairHint(dir string, err error) error {
	var ce *wal.CorruptError
	if !errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%w (to cut the log at its damage, losing what follows: ringstore wal repair %s --yes; without --yes it says what it would cut)",
		err, filepath.Join(dir, "wal"))
}

// kvFlags are the flags of a kv command.
type kvFlags struct {
	ioMode         string
	noCache        bool
	buffered       bool
	from, to       string
	fromSet, toSet bool
	limit          int
	json           bool
	verbose        bool
	hex, b64       bool // keys and values in hex or base64, in and out
}

// decode decodes an argument given in --hex or --base64 (as it is
// otherwise).
func (f *kvFlags) decode(s string) ([]byte, error) {
	switch {
	case f.hex:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not hex (--hex): %v", err)
		}
		return b, nil
	case f.b64:
		b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil {
			return nil, fmt.Errorf("not standard base64 (--base64): %v", err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// text prints a key or value for the text output: encoded with --hex or
// --base64, otherwise as quoteKV does.
func (f *kvFlags) text(b []byte, key bool) string {
	switch {
	case f.hex:
		return hex.EncodeToString(b)
	case f.b64:
		return base64.RawStdEncoding.EncodeToString(b) // no '=': key=value lines split at the one '='
	}
	return quoteKV(string(b), key)
}

// checkKVDir checks that dir is a directory holding a store, or, when
// create, one that does not exist yet or holds nothing.
func checkKVDir(label, dir string, create bool) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) && create {
		return nil
	}
	if err != nil {
		return usagef("%s: %v", label, err)
	}
	if !st.IsDir() {
		return usagef("%s: %s is not a directory", label, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	if len(entries) == 0 && create {
		return nil
	}
	for _, e := range entries {
		if n := e.Name(); n == manifest.FileName || n == "LOCK" || n == "wal" || strings.HasSuffix(n, ".sst") {
			return nil
		}
	}
	return fmt.Errorf("%s: %s holds no kv store (no %s, LOCK, wal or *.sst)", label, filepath.Clean(dir), manifest.FileName)
}

func kvStat(db *kv.DB, _ []string, f *kvFlags, w io.Writer) error {
	st := db.Stats()
	if f.json {
		levels := make([]map[string]any, 0, len(st.Levels))
		for l, ls := range st.Levels {
			levels = append(levels, map[string]any{"level": l, "tables": ls.Tables, "bytes": ls.Bytes, "target_bytes": ls.Target})
		}
		out := map[string]any{
			"dir": db.Dir(), "options": db.Options().String(), "last_seq": st.LastSeq, "memtables": st.Memtables, "memtable_bytes": st.MemtableBytes,
			"snapshots": st.Snapshots, "iterators": st.Iterators,
			"levels": levels, "backend": st.Backend.String(), "fallback_reason": st.FallbackCause,
			"recovery_tail_cuts": len(db.Recovery().Cuts),
			"writes":             st.Writes, "commits": st.Commits, "write_stalls": st.WriteStalls, "log_flushes": st.LogFlushes,
			"gets": st.Gets, "multigets": st.MultiGets, "multiget_keys": st.MultiGetKeys, "read_rounds": st.ReadRounds,
			"block_reads": st.BlockReads, "uncached_read_calls": st.DirectReads, "read_ahead_blocks": st.ReadAheadBlocks,
			"flushes": st.Flushes, "flushed_bytes": st.FlushedBytes, "flush_seconds": st.FlushTime.Seconds(),
			"compactions": st.Compactions, "trivial_moves": st.TrivialMoves, "compacted_in_bytes": st.CompactedIn,
			"compacted_out_bytes": st.CompactedOut, "compaction_seconds": st.CompactionTime.Seconds(),
			"block_cache": nil,
		}
		if st.Cache != nil {
			out["block_cache"] = st.Cache
		}
		return printJSON(w, out)
	}
	fmt.Fprintf(w, "store %s\noptions: %s\n%s", db.Dir(), db.Options(), st)
	return nil
}

func kvGet(db *kv.DB, args []string, f *kvFlags, w io.Writer) error {
	key := []byte(args[0])
	v, err := db.Get(key)
	found := err == nil
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	if f.json {
		out := kvPairJSON(key, v)
		if !found {
			delete(out, "value")
		}
		out["found"] = found
		st := db.Stats()
		out["backend"], out["fallback_reason"] = st.Backend.String(), st.FallbackCause
		if err := printJSON(w, out); err != nil {
			return err
		}
	} else if found {
		fmt.Fprintln(w, f.text(v, false))
	}
	if !found {
		return fmt.Errorf("key %s not found", f.text(key, true))
	}
	return nil
}

// kvPairJSON returns a key and its value as a JSON object: as strings when
// they are UTF-8 text, in base64 under key_base64 / value_base64 otherwise,
// so that no byte is lost or replaced.
func kvPairJSON(key, value []byte) map[string]any {
	m := make(map[string]any, 4)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"key", key}, {"value", value}} {
		if utf8.Valid(f.b) {
			m[f.name] = string(f.b)
		} else {
			m[f.name+"_base64"] = base64.StdEncoding.EncodeToString(f.b)
		}
	}
	return m
}

func kvPut(db *kv.DB, args []string, _ *kvFlags, _ io.Writer) error {
	return db.Put([]byte(args[0]), []byte(args[1]))
}

func kvDelete(db *kv.DB, args []string, _ *kvFlags, _ io.Writer) error {
	return db.Delete([]byte(args[0]))
}

func kvScan(db *kv.DB, _ []string, f *kvFlags, w io.Writer) error {
	var lower, upper []byte
	if f.fromSet {
		lower = []byte(f.from)
	}
	if f.toSet {
		upper = []byte(f.to)
	}
	it := db.NewIteratorWith(kv.ReadOptions{NoFillCache: true}, lower, upper)
	enc := json.NewEncoder(w)
	for n := 0; (f.limit == 0 || n < f.limit) && it.Next(); n++ {
		var err error
		if f.json {
			err = enc.Encode(kvPairJSON(it.Key(), it.Value()))
		} else {
			_, err = fmt.Fprintf(w, "%s=%s\n", f.text(it.Key(), true), f.text(it.Value(), false))
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// quoteKV returns s as it is when it is printable UTF-8 (a key also without
// '='), and as a Go quoted string otherwise or when it starts with '"', so
// that every printed line reads back unambiguously.
func quoteKV(s string, key bool) string {
	plain := utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && (!key || (s != "" && !strings.Contains(s, "=")))
	for _, r := range s {
		if !plain {
			break
		}
		plain = strconv.IsPrint(r)
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}
