package main

import (
	"bufio"
	"encoding/base64"
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
)

const kvUsage = `usage: ringstore kv <command> DIR [args] [flags]

Read and write the kv store in DIR. Every command opens the store (taking
its lock, recovering its log) and closes it before it exits.
Commands:
  stat DIR                     the options in effect and the store's stats: levels, tables, counters
  get DIR KEY                  print KEY's value (exit 1 when it has none)
  put DIR KEY VALUE            set KEY to VALUE, durably (creates the store when DIR has none)
  delete DIR KEY               remove KEY
  scan DIR [--from K] [--to K] [--limit N]
                               print key=value lines in key order, [from, to)
Keys and values print as they are when they are printable text, otherwise
(and a key holding '=', or anything starting with '"') as a Go quoted string.
stat, get and scan take --json: stat and get print one JSON object, scan one
object per line; a key or value that is not UTF-8 text comes as key_base64
or value_base64 instead of key or value.
Flags of every command:
  --io-mode auto|uring|sqpoll|syscall   the engine's backend (auto: RINGSTORE_IO_URING)
  --no-cache                            no block cache: every block read goes to the device
  --buffered                            read tables through the page cache, not O_DIRECT
`

func cmdKV(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, kvUsage)
		return usagef("kv: no command given (stat, get, put, delete or scan)")
	}
	name := args[0]
	type command struct {
		args   []string // the positional arguments after DIR
		create bool     // may create the store
		read   bool     // only reads: opens the store read-only (no lock, nothing written)
		run    func(db *kv.DB, args []string, f *kvFlags, stdout io.Writer) error
	}
	commands := map[string]command{
		"stat":   {nil, false, true, kvStat},
		"get":    {[]string{"KEY"}, false, true, kvGet},
		"put":    {[]string{"KEY", "VALUE"}, true, false, kvPut},
		"delete": {[]string{"KEY"}, false, false, kvDelete},
		"scan":   {nil, false, true, kvScan},
	}
	switch name {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, kvUsage)
		return nil
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprint(stderr, kvUsage)
		return usagef("kv: unknown command %q", name)
	}
	fs := newFlags("kv "+name, stderr)
	synopsis := strings.Join(append([]string{"DIR"}, cmd.args...), " ")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ringstore kv %s %s [flags]\n", name, synopsis)
		fs.PrintDefaults()
	}
	f := &kvFlags{}
	fs.StringVar(&f.ioMode, "io-mode", "auto", "I/O backend: auto (RINGSTORE_IO_URING), uring, sqpoll or syscall")
	fs.BoolVar(&f.noCache, "no-cache", false, "no block cache: every block read goes to the device")
	fs.BoolVar(&f.buffered, "buffered", false, "read tables through the page cache instead of O_DIRECT")
	if cmd.read {
		fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
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
	opts := kv.Options{IOMode: mode, NoBlockCache: f.noCache, BufferedIO: f.buffered, ReadOnly: cmd.read,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "ringstore: "+format+"\n", args...) }}
	db, err := kv.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	w := bufio.NewWriter(stdout)
	err = cmd.run(db, pos[1:], f, w)
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	return nil
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
	if f.json {
		st := db.Stats()
		levels := make([]map[string]any, 0, len(st.Levels))
		for l, ls := range st.Levels {
			levels = append(levels, map[string]any{"level": l, "tables": ls.Tables, "bytes": ls.Bytes, "target_bytes": ls.Target})
		}
		return printJSON(w, map[string]any{
			"dir": db.Dir(), "last_seq": st.LastSeq, "memtables": st.Memtables, "memtable_bytes": st.MemtableBytes,
			"levels": levels, "backend": st.Backend.String(), "fallback_reason": st.FallbackCause,
			"recovery_tail_cuts": len(db.Recovery().Cuts),
		})
	}
	fmt.Fprintf(w, "store %s\noptions: %s\n%s", db.Dir(), db.Options(), db.Stats())
	return nil
}

func kvGet(db *kv.DB, args []string, f *kvFlags, w io.Writer) error {
	v, err := db.Get([]byte(args[0]))
	if errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("key %s not found", quoteKV(args[0], true))
	}
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(w, kvPairJSON([]byte(args[0]), v))
	}
	fmt.Fprintln(w, quoteKV(string(v), false))
	return nil
}

// kvPairJSON returns a key and its value as a JSON object: as strings when
// they are UTF-8 text, in base64 under key_base64 / value_base64 otherwise,
// so that no byte is lost or replaced.
func kvPairJSON(key, value []byte) map[string]string {
	m := make(map[string]string, 2)
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
			_, err = fmt.Fprintf(w, "%s=%s\n", quoteKV(string(it.Key()), true), quoteKV(string(it.Value()), false))
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
