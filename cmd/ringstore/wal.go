package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/ringstore/ringstore/wal"
)

const walUsage = `usage: ringstore wal <command> DIR [flags]

Inspect and repair the write-ahead log in DIR. Every command but
'append' and 'repair --yes' only reads: none takes the log's lock, recovers
a torn tail or writes anything.
Commands:
  append DIR VALUE... [--json] append each VALUE as an entry, durably (the
                               log is made if DIR has none); prints their seqs
  verify DIR [--json]          check every byte: segments, entries, checksums, sequence
  stat DIR [--json]            segments, entries, bytes on disk, first and last seq
  dump DIR [--from SEQ] [--to SEQ] [--limit N] [--format hex|text|json] [--max-bytes N]
                               print entries: seq, length and payload (--json: --format json)
-v says on stderr which backend ran; --json output names it too.
  repair DIR [--yes] [--json]  cut the log at its first damage so that it opens again
                               (without --yes: only say what it would do)
`

// Files of a log directory (see the wal package documentation).
const (
	walSegmentSuffix = ".seg"
	walMetaName      = "wal.meta"
	walLockName      = "wal.lock"
)

// walCommands is every wal subcommand, in the order of walUsage.
var walCommands = []struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) error
}{
	{"append", walAppend}, {"verify", walVerify}, {"stat", walStat}, {"dump", walDump}, {"repair", walRepair},
}

func walCommandNames() []string {
	var names []string
	for _, c := range walCommands {
		names = append(names, c.name)
	}
	return names
}

func cmdWAL(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("wal: no command given (%s)", strings.Join(walCommandNames(), ", "))
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, walUsage)
		return nil
	}
	for _, c := range walCommands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	return usagef("wal: unknown command %q (%s)", args[0], strings.Join(walCommandNames(), ", "))
}

// walReadBackend is the backend of the read-only wal commands: they read
// the files with pread (os.File), through no engine.
const walReadBackend = "syscall (read-only: the files read with pread, no engine, no lock)"

// walFlags is newFlags for `wal NAME DIR [flags]`, with a usage line that
// shows DIR.
func walFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := newFlags("wal "+name, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ringstore wal %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseDir parses flags given before and after the one positional DIR and
// checks that DIR is a directory holding a log.
func parseDir(fs *flag.FlagSet, args []string) (string, error) {
	if err := parse(fs, args, true); err != nil {
		return "", err
	}
	name := strings.TrimPrefix(fs.Name(), "ringstore ")
	if fs.NArg() == 0 {
		return "", usagef("%s: missing DIR, the log's directory", name)
	}
	dir := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:], false); err != nil {
		return "", err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", usagef("%s: %v", name, err)
	}
	if !st.IsDir() {
		return "", usagef("%s: %s is not a directory", name, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, walSegmentSuffix) || n == walMetaName || n == walLockName {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%s: %s holds no log (no segment files, %s or %s)", name, dir, walMetaName, walLockName)
}

// segmentJSON and damageJSON are parts of the --json reports.
type segmentJSON struct {
	Name     string `json:"name"`
	BaseSeq  uint64 `json:"base_seq"`
	LastSeq  uint64 `json:"last_seq"`
	Entries  uint64 `json:"entries"`
	Sealed   bool   `json:"sealed"`
	Size     int64  `json:"size"`
	DataEnd  int64  `json:"data_end"`
	TornTail int64  `json:"torn_tail,omitempty"`
	// Reusable: format version 2, with a stale table (RecycleSegments).
	Reusable bool `json:"reusable,omitempty"`
	// Closed: the last segment carries the clean-close mark and its
	// entries are the ones the mark records.
	Closed bool `json:"closed,omitempty"`
}

type damageJSON struct {
	File    string `json:"file"`
	Offset  int64  `json:"offset"`
	LastSeq uint64 `json:"last_good_seq,omitempty"`
	What    string `json:"what"`
	// The entries a cut at Offset would lose, as far as they could be
	// read (lost_last 0: every entry from lost_first on).
	LostFirst uint64 `json:"lost_first,omitempty"`
	LostLast  uint64 `json:"lost_last,omitempty"`
	Lost      uint64 `json:"lost,omitempty"`
}

func damageOf(err error) *damageJSON {
	var ce *wal.CorruptError
	if !errors.As(err, &ce) {
		return nil
	}
	return &damageJSON{File: ce.Path, Offset: ce.Offset, LastSeq: ce.LastSeq, What: strings.ReplaceAll(ce.Err.Error(), "wal: ", ""), LostFirst: ce.FirstLost, LostLast: ce.LastLost, Lost: ce.Lost}
}

// lostText says which entries a cut at the damage loses.
func (d *damageJSON) lostText() string {
	switch {
	case d.LostLast >= d.LostFirst && d.LostFirst > 0:
		return fmt.Sprintf("a cut there loses entries %d to %d (%d entries)", d.LostFirst, d.LostLast, d.Lost)
	case d.LostFirst > 0:
		return fmt.Sprintf("a cut there loses every entry from %d on", d.LostFirst)
	}
	return ""
}

func segmentsOf(v wal.VerifyReport) []segmentJSON {
	segs := make([]segmentJSON, 0, len(v.Segments))
	for _, s := range v.Segments {
		segs = append(segs, segmentJSON{Name: filepath.Base(s.Path), BaseSeq: s.BaseSeq, LastSeq: s.LastSeq,
			Entries: s.Entries(), Sealed: s.Sealed, Size: s.Size, DataEnd: s.DataEnd, TornTail: s.TornTail, Reusable: s.Reusable, Closed: s.Closed})
	}
	return segs
}

// verifyJSON is what `ringstore wal verify --json` prints.
type verifyJSON struct {
	Dir      string        `json:"dir"`
	OK       bool          `json:"ok"`
	FirstSeq uint64        `json:"first_seq"`
	LastSeq  uint64        `json:"last_seq"`
	Segments []segmentJSON `json:"segments"`
	Damage   *damageJSON   `json:"damage,omitempty"`
	Error    string        `json:"error,omitempty"`
	Backend  string        `json:"backend"`
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func walVerify(args []string, stdout, stderr io.Writer) error {
	fs := walFlags("verify", "DIR [--json] [-v]", stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of text (with the backend)")
	verbose := fs.Bool("v", false, "say on stderr which backend read the log")
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	if *verbose {
		fmt.Fprintf(stderr, "ringstore: wal verify: backend %s\n", walReadBackend)
	}
	v, verr := wal.Verify(dir)
	if *asJSON {
		r := verifyJSON{Dir: dir, OK: verr == nil, Segments: segmentsOf(v), Damage: damageOf(verr), Backend: walReadBackend}
		if verr == nil {
			r.FirstSeq, r.LastSeq = v.FirstSeq, v.LastSeq
		} else {
			r.Error = verr.Error()
		}
		if err := printJSON(stdout, r); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "segment\tseqs\tentries\tstate\tdata end\tsize")
		for _, s := range v.Segments {
			state := "sealed"
			if !s.Sealed {
				state = "active"
			}
			if s.Closed {
				state += ", closed cleanly"
			}
			if s.TornTail > 0 {
				state += fmt.Sprintf(", torn tail of %d bytes", s.TornTail)
			}
			if s.Reusable {
				state += ", reusable"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\n", filepath.Base(s.Path), seqRange(s.BaseSeq, s.LastSeq), s.Entries(), state, s.DataEnd, s.Size)
		}
		tw.Flush()
		if d := damageOf(verr); d != nil {
			fmt.Fprintf(stdout, "damage     %s at offset %d: %s\n", d.File, d.Offset, d.What)
		} else if verr == nil {
			fmt.Fprintf(stdout, "first seq  %d\nlast seq   %d\n", v.FirstSeq, v.LastSeq)
			if v.LastSeq < v.FirstSeq {
				fmt.Fprintln(stdout, "ok (empty)")
			} else {
				fmt.Fprintln(stdout, "ok")
			}
		}
	}
	if verr != nil {
		return fmt.Errorf("wal verify %s: %w", dir, verr)
	}
	return nil
}

// seqRange prints first..last, or "-" for an empty range.
func seqRange(first, last uint64) string {
	if last < first {
		return "-"
	}
	return fmt.Sprintf("%d..%d", first, last)
}

// statJSON is what `ringstore wal stat --json` prints.
type statJSON struct {
	Dir           string      `json:"dir"`
	OK            bool        `json:"ok"`
	Segments      int         `json:"segments"`      // segment files in the directory
	SegmentsRead  int         `json:"segments_read"` // those read whole before any damage
	Sealed        int         `json:"sealed"`
	Active        int         `json:"active"`
	FirstSeq      uint64      `json:"first_seq"`
	LastSeq       uint64      `json:"last_seq"`
	Entries       uint64      `json:"entries"`        // last_seq - first_seq + 1
	StoredEntries uint64      `json:"stored_entries"` // in the segment files, some maybe before first_seq
	BytesOnDisk   int64       `json:"bytes_on_disk"`  // segment files and wal.meta
	EntryBytes    int64       `json:"entry_bytes"`    // entry headers and payloads
	SegmentSize   int64       `json:"segment_size,omitempty"`
	TornTail      int64       `json:"torn_tail,omitempty"`
	ActiveSegment string      `json:"active_segment,omitempty"`
	OldestSegment string      `json:"oldest_segment,omitempty"`
	NewestSegment string      `json:"newest_segment,omitempty"`
	Damage        *damageJSON `json:"damage,omitempty"`
	Error         string      `json:"error,omitempty"`
	Backend       string      `json:"backend"`
}

func walStat(args []string, stdout, stderr io.Writer) error {
	fs := walFlags("stat", "DIR [--json] [-v]", stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of text (with the backend)")
	verbose := fs.Bool("v", false, "say on stderr which backend read the log")
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	if *verbose {
		fmt.Fprintf(stderr, "ringstore: wal stat: backend %s\n", walReadBackend)
	}
	v, verr := wal.Verify(dir)
	r := statJSON{Dir: dir, OK: verr == nil, SegmentsRead: len(v.Segments), Damage: damageOf(verr), Backend: walReadBackend}
	if verr != nil {
		r.Error = verr.Error()
	}
	if st, err := os.Stat(filepath.Join(dir, walMetaName)); err == nil {
		r.BytesOnDisk += st.Size()
	}
	// Every segment file counts, also those at and after the damage, which
	// Verify stops before.
	files, err := filepath.Glob(filepath.Join(dir, "*"+walSegmentSuffix))
	if err != nil {
		return fmt.Errorf("wal stat %s: %w", dir, err)
	}
	r.Segments = len(files)
	read := map[string]bool{}
	for _, s := range v.Segments {
		read[filepath.Base(s.Path)] = true
	}
	sort.Strings(files)
	for _, p := range files {
		if read[filepath.Base(p)] {
			continue
		}
		if st, err := os.Stat(p); err == nil {
			r.BytesOnDisk += st.Size()
		}
	}
	if len(files) > 0 {
		r.OldestSegment, r.NewestSegment = filepath.Base(files[0]), filepath.Base(files[len(files)-1])
	}
	for i, s := range v.Segments {
		if s.Sealed {
			r.Sealed++
		} else {
			r.Active++
			r.ActiveSegment = filepath.Base(s.Path)
		}
		r.StoredEntries += s.Entries()
		r.BytesOnDisk += s.Size
		r.EntryBytes += s.EntryBytes()
		r.TornTail += s.TornTail
		if i == 0 {
			r.SegmentSize = s.Size
		} else if r.SegmentSize != s.Size {
			r.SegmentSize = 0 // sizes differ
		}
	}
	if verr == nil {
		r.FirstSeq, r.LastSeq = v.FirstSeq, v.LastSeq
		r.Entries = v.LastSeq + 1 - v.FirstSeq
	}
	if *asJSON {
		if err := printJSON(stdout, r); err != nil {
			return err
		}
	} else {
		w := func(k, format string, args ...any) {
			fmt.Fprintf(stdout, "%-14s %s\n", k, fmt.Sprintf(format, args...))
		}
		w("dir", "%s", dir)
		if verr == nil {
			w("entries", "%d (seq %s)", r.Entries, seqRange(r.FirstSeq, r.LastSeq))
			if r.StoredEntries > r.Entries {
				w("", "and %d truncated before seq %d, still in the oldest segment", r.StoredEntries-r.Entries, r.FirstSeq)
			}
		} else {
			w("entries", "%d in the segments read before the damage", r.StoredEntries)
		}
		state := fmt.Sprintf("%d sealed, %d active", r.Sealed, r.Active)
		if r.ActiveSegment != "" {
			state += " (" + r.ActiveSegment + ")"
		}
		if r.SegmentsRead < r.Segments {
			state += fmt.Sprintf("; %d read whole before the damage, %d from the damaged one on not read", r.SegmentsRead, r.Segments-r.SegmentsRead)
		}
		w("segments", "%d: %s", r.Segments, state)
		if r.Segments > 0 {
			w("oldest/newest", "%s / %s", r.OldestSegment, r.NewestSegment)
		}
		if r.SegmentSize > 0 {
			w("segment size", "%s", fmtBytes(r.SegmentSize))
		}
		w("bytes on disk", "%s", fmtBytes(r.BytesOnDisk))
		w("entry bytes", "%s, headers and payloads", fmtBytes(r.EntryBytes))
		if r.TornTail > 0 {
			w("torn tail", "%d bytes after the last entry (Open cuts them)", r.TornTail)
		}
		if r.Damage != nil {
			w("damage", "%s at offset %d: %s", r.Damage.File, r.Damage.Offset, r.Damage.What)
		} else if verr == nil {
			w("state", "ok")
		}
	}
	if verr != nil {
		return fmt.Errorf("wal stat %s: %w", dir, verr)
	}
	return nil
}

// fmtBytes prints n exactly and, from 1 KiB, in binary units too.
func fmtBytes(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v, unit = v/1024, u
		if v < 1024 {
			break
		}
	}
	return fmt.Sprintf("%d B (%.4g %s)", n, v, unit)
}

// walEntry is one entry a reader found.
type walEntry struct {
	Seq     uint64 `json:"seq"`
	Len     int    `json:"len"`
	Segment string `json:"segment"`
	Offset  int64  `json:"offset"`
	Payload []byte `json:"payload"` // base64 in JSON
}

// readLog reads the entries of the log in dir from seq from to seq to in
// order through wal.Reader (read-only, no lock, the checks Open makes) and
// calls fn for each until fn returns false. Damage is a *wal.CorruptError
// naming the file and offset. A torn tail of the last, unsealed segment
// (which Open would cut) ends the entries; notef hears of it.
func readLog(dir string, from, to uint64, fn func(walEntry) bool, notef func(string, ...any)) (first uint64, err error) {
	r, err := wal.NewReader(dir)
	if err != nil {
		return 0, err
	}
	torn, err := r.Scan(from, to, func(e wal.Entry) bool {
		return fn(walEntry{Seq: e.Seq, Len: len(e.Payload), Segment: filepath.Base(e.Segment), Offset: e.Offset, Payload: e.Payload})
	})
	if torn != nil {
		notef("%s: the entries end at a torn tail at offset %d after seq %d (%d bytes, %d whole entries never acknowledged); Open would cut it",
			torn.Path, torn.DataEnd, torn.LastSeq, torn.TornTail, torn.TornEntries)
	}
	return r.FirstSeq(), err
}

func walDump(args []string, stdout, stderr io.Writer) error {
	fs := walFlags("dump", "DIR [--from SEQ] [--to SEQ] [--limit N] [--format hex|text|json] [--json] [--max-bytes N]", stderr)
	fromS := fs.String("from", "", "first sequence number to print (default: the log's first)")
	toS := fs.String("to", "", "last sequence number to print (default: the log's last)")
	limit := fs.Int("limit", 0, "print at most this many entries (0: no limit)")
	format := fs.String("format", "hex", "payload format: hex, text (printable payloads as they are, others quoted) or json (one object a line, payload in base64)")
	maxBytes := fs.Int("max-bytes", 32, "show at most this many payload bytes an entry in hex and text (0: all)")
	asJSON := fs.Bool("json", false, "the same as --format json: one JSON object a line, the payload in base64")
	verbose := fs.Bool("v", false, "say on stderr which backend read the log")
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	if *asJSON {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "format" })
		if set && *format != "json" {
			return usagef("wal dump: --json and --format %s exclude each other", *format)
		}
		*format = "json"
	}
	if *verbose {
		fmt.Fprintf(stderr, "ringstore: wal dump: backend %s\n", walReadBackend)
	}
	from, to := uint64(1), uint64(1<<64-1)
	if *fromS != "" {
		if from, err = parseSeq(*fromS); err != nil {
			return usagef("wal dump: --from: %v", err)
		}
	}
	if *toS != "" {
		if to, err = parseSeq(*toS); err != nil {
			return usagef("wal dump: --to: %v", err)
		}
	}
	if from > to {
		return usagef("wal dump: --from %d is after --to %d", from, to)
	}
	if *limit < 0 {
		return usagef("wal dump: --limit must not be negative, got %d", *limit)
	}
	if *maxBytes < 0 {
		return usagef("wal dump: --max-bytes must not be negative, got %d", *maxBytes)
	}
	var print func(walEntry) error
	switch *format {
	case "hex":
		print = func(e walEntry) error {
			p, more := capped(e.Payload, *maxBytes)
			_, err := fmt.Fprintf(stdout, "seq=%d len=%d %s%s\n", e.Seq, e.Len, hex.EncodeToString(p), more)
			return err
		}
	case "text":
		print = func(e walEntry) error {
			n := len(e.Payload)
			if *maxBytes > 0 && n > *maxBytes {
				n = *maxBytes
				for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(e.Payload[n]); i++ {
					n-- // do not cut a character in two
				}
			}
			p, more := capped(e.Payload, n)
			_, err := fmt.Fprintf(stdout, "seq=%d len=%d %s%s\n", e.Seq, e.Len, textOf(p), more)
			return err
		}
	case "json":
		enc := json.NewEncoder(stdout)
		print = func(e walEntry) error { return enc.Encode(e) }
	default:
		return usagef("wal dump: --format %q: want hex, text or json", *format)
	}
	var n int
	var werr error
	first, err := readLog(dir, from, to, func(e walEntry) bool {
		if werr = print(e); werr != nil {
			return false
		}
		n++
		return *limit == 0 || n < *limit
	}, func(format string, args ...any) { fmt.Fprintf(stderr, "ringstore: wal dump: "+format+"\n", args...) })
	if werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("wal dump %s: stopped after %d entries: %w", dir, n, err)
	}
	if n == 0 {
		msg := fmt.Sprintf("no entries from seq %d to %d", from, to)
		if *toS == "" {
			msg = fmt.Sprintf("no entries from seq %d on", max(from, first))
		}
		if v, err := wal.Verify(dir); err == nil {
			msg += fmt.Sprintf(" (the log holds %s)", seqRange(v.FirstSeq, v.LastSeq))
		}
		fmt.Fprintf(stderr, "ringstore: wal dump: %s\n", msg)
	}
	return nil
}

// parseSeq parses a sequence number, which starts at 1.
func parseSeq(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a sequence number", s)
	}
	if v == 0 {
		return 0, fmt.Errorf("sequence numbers start at 1, got 0")
	}
	return v, nil
}

// capped returns at most n bytes of p (all of it when n is 0) and what to
// print for the rest.
func capped(p []byte, n int) ([]byte, string) {
	if n == 0 || len(p) <= n {
		return p, ""
	}
	return p[:n], fmt.Sprintf("… (+%d bytes)", len(p)-n)
}

// textOf prints a printable payload as it is and any other quoted, with Go
// escapes.
func textOf(p []byte) string {
	s := string(p)
	if !utf8.ValidString(s) || strings.HasPrefix(s, `"`) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// repairJSON is what `ringstore wal repair --json` prints.
type repairJSON struct {
	Dir          string      `json:"dir"`
	Applied      bool        `json:"applied"`
	Damage       *damageJSON `json:"damage,omitempty"`
	Plan         []string    `json:"plan,omitempty"`
	Actions      []string    `json:"actions,omitempty"`
	LostFrom     uint64      `json:"lost_from,omitempty"`
	LastSeqAfter uint64      `json:"last_seq_after,omitempty"`
	VerifiedOK   bool        `json:"verified_ok"` // after an applied repair
	Backend      string      `json:"backend"`
	Fallback     string      `json:"fallback_reason,omitempty"`
}

func walRepair(args []string, stdout, stderr io.Writer) error {
	fs := walFlags("repair", "DIR [--yes] [--json] [-v]", stderr)
	yes := fs.Bool("yes", false, "do it: cut the log at its first damage, losing every entry after it")
	asJSON := fs.Bool("json", false, "print JSON instead of text (with the backend)")
	verbose := fs.Bool("v", false, "say on stderr which backend read (and wrote) the log")
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	r := repairJSON{Dir: dir, Applied: *yes, Backend: walReadBackend}
	if *verbose && !*yes {
		fmt.Fprintf(stderr, "ringstore: wal repair: backend %s\n", walReadBackend)
	}
	out := func() error {
		if *asJSON {
			return printJSON(stdout, r)
		}
		return nil
	}
	if !*yes {
		v, verr := wal.Verify(dir)
		r.Damage = damageOf(verr)
		if verr != nil && r.Damage == nil {
			return fmt.Errorf("wal repair %s: %w", dir, verr)
		}
		if r.Damage == nil {
			if err := out(); err != nil {
				return err
			}
			if !*asJSON {
				fmt.Fprintf(stdout, "no damage found in %s (seq %s): repair would change nothing\n", dir, seqRange(v.FirstSeq, v.LastSeq))
			}
			return nil
		}
		plan, err := wal.PlanRepair(dir)
		if err != nil {
			return fmt.Errorf("wal repair %s (dry run): %w", dir, err)
		}
		r.Plan, r.LostFrom, r.LastSeqAfter = plan.Actions, plan.LostFrom, plan.LastSeqAfter
		if err := out(); err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "damage     %s at offset %d: %s\n", r.Damage.File, r.Damage.Offset, r.Damage.What)
			if l := r.Damage.lostText(); l != "" {
				fmt.Fprintf(stdout, "           %s\n", l)
			}
			fmt.Fprintln(stdout, "repair would (a dry run: nothing was changed; run again with --yes to do it):")
			for _, p := range r.Plan {
				fmt.Fprintf(stdout, "  %s\n", p)
			}
			if plan.LostFrom != 0 {
				fmt.Fprintf(stdout, "entries from seq %d on would be cut; the log would end at seq %d\n", plan.LostFrom, plan.LastSeqAfter)
			} else {
				fmt.Fprintf(stdout, "no entry would be lost; the log would end at seq %d\n", plan.LastSeqAfter)
			}
		}
		return nil
	}
	rep, err := wal.Repair(dir, wal.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(stderr, "ringstore: wal repair: "+format+"\n", args...)
	}})
	r.Actions, r.LostFrom, r.LastSeqAfter = rep.Actions, rep.LostFrom, rep.LastSeqAfter
	r.Backend, r.Fallback = rep.Backend.String(), rep.FallbackReason
	if *verbose {
		fmt.Fprintf(stderr, "ringstore: wal repair: %s\n", backendText(r.Backend, r.Fallback))
	}
	if !*asJSON {
		for _, a := range rep.Actions {
			fmt.Fprintln(stdout, a)
		}
	}
	if err != nil {
		if jerr := out(); jerr != nil {
			return jerr
		}
		return fmt.Errorf("wal repair %s: %w", dir, err)
	}
	_, verr := wal.Verify(dir)
	r.VerifiedOK = verr == nil
	if err := out(); err != nil {
		return err
	}
	if !*asJSON {
		switch {
		case len(rep.Actions) == 0:
			fmt.Fprintf(stdout, "no damage found: nothing changed (last seq %d)\n", rep.LastSeqAfter)
		case rep.LostFrom != 0:
			fmt.Fprintf(stdout, "repaired: entries from seq %d on were cut; the log now ends at seq %d\n", rep.LostFrom, rep.LastSeqAfter)
		default:
			fmt.Fprintf(stdout, "repaired: no entry lost; the log ends at seq %d\n", rep.LastSeqAfter)
		}
	}
	if verr != nil {
		return fmt.Errorf("wal repair %s: the log still does not verify after repair: %w", dir, verr)
	}
	return nil
}

// walAppend appends its VALUEs to the log in DIR, each an entry durable
// before the command says so.
func walAppend(args []string, stdout, stderr io.Writer) error {
	fs := walFlags("append", "DIR VALUE... [--json] [-v] (after --, every argument is a VALUE)", stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of text (with the backend)")
	verbose := fs.Bool("v", false, "say on stderr which backend the log ran on (and why, after a fallback)")
	// Flags may come anywhere; "--" ends them, so a VALUE may start with "-".
	var flags, pos []string
	for i, a := range args {
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
		} else {
			pos = append(pos, a)
		}
	}
	if err := parse(fs, flags, false); err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("wal append: missing DIR, the log's directory")
	case len(pos) == 1:
		return usagef("wal append: no VALUE to append")
	}
	dir := pos[0]
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return usagef("wal append: %s is not a directory", dir)
	}
	l, err := wal.Open(dir, wal.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(stderr, "ringstore: wal append: "+format+"\n", args...)
	}})
	if err != nil {
		return wrapCmd("wal append", err)
	}
	st := l.Stats()
	if *verbose {
		fmt.Fprintf(stderr, "ringstore: wal append: %s\n", backendText(st.Backend.String(), st.FallbackReason))
	}
	var seqs []uint64
	for _, v := range pos[1:] {
		seq, err := l.Append([]byte(v))
		if err != nil {
			l.Close()
			return fmt.Errorf("wal append %s: after %d entries: %w", dir, len(seqs), err)
		}
		seqs = append(seqs, seq)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("wal append %s: %w", dir, err)
	}
	if *asJSON {
		return printJSON(stdout, struct {
			Dir      string   `json:"dir"`
			Seqs     []uint64 `json:"seqs"`
			Backend  string   `json:"backend"`
			Fallback string   `json:"fallback_reason,omitempty"`
		}{dir, seqs, st.Backend.String(), st.FallbackReason})
	}
	for _, s := range seqs {
		fmt.Fprintf(stdout, "appended seq %d\n", s)
	}
	return nil
}
