package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/state"
)

const stateUsage = `usage: ringstore state <command> DIR [args] [flags]

Read the keyed state (package state) of one subtask in DIR, or a checkpoint
of it. Every command opens the store read-only: no lock, nothing written,
beside a running owner.
Commands:
  stat DIR                     key groups, the states, entries, the last checkpoint's meta
  ls DIR [STATE]               the states with their kinds, TTLs, entries and key groups;
                               with STATE, its entries (key group, key, namespace, user key,
                               expiry) in stored order (--limit N)
  get DIR STATE KEY            KEY's entries in STATE, every namespace: a value, a map's
                               user keys and values, a list's items, timers' times
Keys are given as they are, or in hex with --hex or base64 with --base64;
bytes print as they are when printable text, otherwise Go-quoted (--hex,
--base64: in that encoding). --json prints JSON (bytes that are not UTF-8
text as *_base64), with the backend.
`

// stateCommands are the state subcommands: their positional arguments
// after DIR (the optional ones in brackets).
var stateCommands = []struct {
	name string
	args []string
}{
	{"stat", nil}, {"ls", []string{"[STATE]"}}, {"get", []string{"STATE", "KEY"}},
}

func stateCommandNames() []string {
	var names []string
	for _, c := range stateCommands {
		names = append(names, c.name)
	}
	return names
}

func cmdState(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("state: no command given (%s)", strings.Join(stateCommandNames(), ", "))
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		fmt.Fprint(stdout, stateUsage)
		return nil
	}
	var want []string
	found := false
	for _, c := range stateCommands {
		if c.name == name {
			want, found = c.args, true
		}
	}
	if !found {
		return usagef("state: unknown command %q (%s)", name, strings.Join(stateCommandNames(), ", "))
	}
	label := "state " + name
	synopsis := strings.Join(append([]string{"DIR"}, want...), " ")
	fs := newFlags(label, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ringstore state %s %s [flags]\n", name, synopsis)
		fs.PrintDefaults()
	}
	f := &kvFlags{}
	fs.StringVar(&f.ioMode, "io-mode", "auto", "I/O backend: auto (RINGSTORE_IO_URING), uring, sqpoll or syscall")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text (with the backend)")
	fs.BoolVar(&f.verbose, "v", false, "say on stderr which backend the store ran on (and why, after a fallback)")
	if name != "stat" {
		fs.BoolVar(&f.hex, "hex", false, "keys and values, in the arguments and the output, in hex")
		fs.BoolVar(&f.b64, "base64", false, "keys and values, in the arguments and the output, in standard base64 (printed without '=' padding)")
	}
	if name == "ls" {
		fs.IntVar(&f.limit, "limit", 0, "with STATE: print at most N entries (0: all)")
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("%s: missing DIR, the state's directory", label)
	}
	required := 0
	for _, a := range want {
		if !strings.HasPrefix(a, "[") {
			required++
		}
	}
	if len(pos)-1 < required {
		return usagef("%s: missing %s (usage: ringstore state %s %s)", label, want[len(pos)-1], name, synopsis)
	}
	if len(pos)-1 > len(want) {
		return usagef("%s: unexpected argument %q (usage: ringstore state %s %s)", label, pos[1+len(want)], name, synopsis)
	}
	if f.hex && f.b64 {
		return usagef("%s: --hex and --base64 exclude each other", label)
	}
	if f.limit < 0 {
		return usagef("%s: --limit must not be negative, got %d", label, f.limit)
	}
	mode, err := ioengine.ParseIOMode(f.ioMode)
	if err != nil {
		return usagef("%s: --io-mode: %v", label, err)
	}
	dir := pos[0]
	if err := checkStateDir(label, dir); err != nil {
		return err
	}
	var key []byte
	if name == "get" {
		if key, err = f.decode(pos[2]); err != nil {
			return usagef("%s: KEY %q: %v", label, pos[2], err)
		}
	}
	in, err := state.OpenInspector(dir, kv.Options{IOMode: mode,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "ringstore: "+format+"\n", args...) }})
	if err != nil {
		return wrapCmd(label, withRepairHint(dir, err))
	}
	w := bufio.NewWriter(stdout)
	switch {
	case name == "stat" || name == "ls" && len(pos) == 1:
		err = stateSummary(in, name == "stat", f, w, stderr, label)
	default:
		err = stateEntries(in, pos[1], key, f, w, stderr, label)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := in.Close(); err == nil {
		err = cerr
	}
	return wrapCmd(label, err)
}

// checkStateDir checks that dir is a directory holding a store.
func checkStateDir(label, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return usagef("%s: %v", label, err)
	}
	if !st.IsDir() {
		return usagef("%s: %s is not a directory", label, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, manifest.FileName)); err != nil {
		return fmt.Errorf("%s: %s holds no state (no %s: the state writes one at its first flush or checkpoint)", label, dir, manifest.FileName)
	}
	return nil
}

// stateInfoJSON is one state in the JSON of state stat and ls.
type stateInfoJSON struct {
	Name       string  `json:"name"`
	ID         uint16  `json:"id"`
	Kind       string  `json:"kind"`
	TTLSeconds float64 `json:"ttl_seconds"`
	Entries    uint64  `json:"entries"`
	Expired    uint64  `json:"expired"`
	Bytes      int64   `json:"bytes"`
	KeyGroups  int     `json:"key_groups"`
}

func stateSummary(in *state.Inspector, stat bool, f *kvFlags, w, stderr io.Writer, label string) error {
	sum, err := in.Summary()
	if err != nil {
		return err
	}
	if f.verbose {
		fmt.Fprintf(stderr, "ringstore: %s: %s\n", label, backendText(sum.Backend, sum.FallbackReason))
	}
	var entries uint64
	states := make([]stateInfoJSON, 0, len(sum.States))
	for _, s := range sum.States {
		entries += s.Entries
		states = append(states, stateInfoJSON{s.Name, s.ID, s.Kind.String(), s.TTL.Seconds(), s.Entries, s.Expired, s.Bytes, s.KeyGroups})
	}
	if f.json {
		out := map[string]any{"dir": sum.Dir, "max_key_groups": sum.MaxKeyGroups, "states": states, "entries": entries,
			"unregistered_entries": sum.Unregistered, "backend": sum.Backend, "fallback_reason": sum.FallbackReason,
			"checkpoint_meta": nil}
		if sum.HasCheckpointMeta {
			out["checkpoint_meta"] = bytesJSON(sum.CheckpointMeta)
		}
		return printJSON(w, out)
	}
	if stat {
		fmt.Fprintf(w, "state       %s\nkey groups  %d\nstates      %d, %d entries\n", sum.Dir, sum.MaxKeyGroups, len(sum.States), entries)
		if sum.Unregistered > 0 {
			fmt.Fprintf(w, "            and %d entries under ids no registry record names\n", sum.Unregistered)
		}
		if sum.HasCheckpointMeta {
			fmt.Fprintf(w, "checkpoint  meta %s (the input position of the last checkpoint)\n", quoteKV(string(sum.CheckpointMeta), false))
		} else {
			fmt.Fprintf(w, "checkpoint  none taken\n")
		}
		fmt.Fprintf(w, "%s\n", backendText(sum.Backend, sum.FallbackReason))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "state\tid\tkind\tttl\tentries\texpired\tkey groups\tbytes")
	for _, s := range sum.States {
		ttl := "none"
		if s.TTL > 0 {
			ttl = s.TTL.String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", quoteKV(s.Name, true), s.ID, s.Kind, ttl, s.Entries, s.Expired, s.KeyGroups, s.Bytes)
	}
	return tw.Flush()
}

// isText says whether b is UTF-8 text (JSON carries it as a string).
func isText(b []byte) bool { return utf8.Valid(b) }

// printJSONLine prints v as one line of JSON.
func printJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// bytesJSON is b as a JSON string when it is UTF-8 text, otherwise as an
// object {"base64": ...}.
func bytesJSON(b []byte) any {
	if isText(b) {
		return string(b)
	}
	return map[string]string{"base64": base64.StdEncoding.EncodeToString(b)}
}

func stateEntries(in *state.Inspector, name string, key []byte, f *kvFlags, w, stderr io.Writer, label string) error {
	kind, _, ok := in.Lookup(name)
	if !ok {
		return fmt.Errorf("no state %q in this directory ('ringstore state ls DIR' lists them)", name)
	}
	if f.verbose {
		fmt.Fprintf(stderr, "ringstore: %s: %s\n", label, backendText(in.Backend()))
	}
	n := 0
	var werr error
	err := in.Entries(name, key, func(e state.Entry) bool {
		if f.json {
			o := map[string]any{"group": e.Group}
			put := func(k string, b []byte) {
				switch {
				case f.hex:
					o[k+"_hex"] = fmt.Sprintf("%x", b)
				case isText(b) && !f.b64:
					o[k] = string(b)
				default:
					o[k+"_base64"] = base64.StdEncoding.EncodeToString(b)
				}
			}
			put("key", e.Key)
			put("ns", e.NS)
			switch kind {
			case state.KindTimers:
				o["timer"] = e.Timer
			case state.KindMap:
				put("user_key", e.UserKey)
				put("value", e.Payload)
			case state.KindList:
				items := make([]any, len(e.Items))
				for i, it := range e.Items {
					items[i] = bytesJSON(it)
				}
				o["items"] = items
			default:
				put("value", e.Payload)
			}
			if !e.ExpiresAt.IsZero() {
				o["expires_at"], o["expired"] = e.ExpiresAt.UTC().Format(time.RFC3339Nano), e.Expired
			}
			werr = printJSONLine(w, o)
		} else {
			var b strings.Builder
			fmt.Fprintf(&b, "group=%d key=%s ns=%s", e.Group, f.text(e.Key, true), f.text(e.NS, true))
			switch kind {
			case state.KindTimers:
				fmt.Fprintf(&b, " timer=%d", e.Timer)
			case state.KindMap:
				fmt.Fprintf(&b, " user_key=%s value=%s", f.text(e.UserKey, true), f.text(e.Payload, false))
			case state.KindList:
				items := make([]string, len(e.Items))
				for i, it := range e.Items {
					items[i] = f.text(it, false)
				}
				fmt.Fprintf(&b, " items=[%s]", strings.Join(items, " "))
			default:
				fmt.Fprintf(&b, " value=%s", f.text(e.Payload, false))
			}
			if !e.ExpiresAt.IsZero() {
				fmt.Fprintf(&b, " expires=%s", e.ExpiresAt.UTC().Format(time.RFC3339Nano))
				if e.Expired {
					b.WriteString(" (expired)")
				}
			}
			_, werr = fmt.Fprintln(w, b.String())
		}
		n++
		return werr == nil && (f.limit == 0 || n < f.limit)
	})
	if err = errors.Join(err, werr); err != nil {
		return err
	}
	if key != nil && n == 0 {
		return fmt.Errorf("state %q has no entry for key %s", name, f.text(key, true))
	}
	return nil
}
