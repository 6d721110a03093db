// Command ringstore probes the machine for io_uring and O_DIRECT, runs
// ringstore's side-by-side benchmarks, and inspects and repairs the stores
// its engines write (wal, kv, state) and the Arrow data its scans read.
//
// Run `ringstore help` for the commands; `ringstore <command> --help` for
// one command's flags. The commands are the table cliCommands: dispatch
// and the help test both read it.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ringstore/ringstore/bench"
)

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ msg string }

// helpText is what --help asked for: printed on stdout, exit status 0.
type helpText struct{ text string }

func (h *helpText) Error() string { return "help requested" }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// wrapCmd returns err from the command label ("kv get"), or nil. The
// prefixes its layers repeat ("kv get: kv: wal: ...") are dropped when run
// prints it (dedupPrefixes).
func wrapCmd(label string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", label, err)
}

// prefixWords are the words errors start their parts with: the packages'
// prefixes ("wal: ") and the commands' labels ("kv get: ").
var prefixWords = []string{"ringstore", "kv", "wal", "state", "sstable", "manifest", "arrowscan", "events",
	"bufpool", "ioengine", "directio", "uring", "bench", "scan", "gen", "report", "nexmark"}

// dedupPrefixes drops from msg each "word: " prefix of a part (the start,
// or after ": " or "(") whose word an earlier part already started with:
// "kv get: kv: wal: f: wal: truncated" becomes "kv get: wal: f: truncated".
// Layers that each wrap with their package's name say it once.
func dedupPrefixes(msg string) string {
	seen := map[string]bool{}
	var b strings.Builder
	atStart := true
outer:
	for i := 0; i < len(msg); {
		if atStart {
			for _, w := range prefixWords {
				rest := msg[i:]
				if !strings.HasPrefix(rest, w) || len(rest) == len(w) || rest[len(w)] != ':' && rest[len(w)] != ' ' {
					continue
				}
				if seen[w] && strings.HasPrefix(rest, w+": ") {
					i += len(w) + 2
					continue outer
				}
				seen[w] = true
				break
			}
		}
		c := msg[i]
		b.WriteByte(c)
		i++
		atStart = c == '(' || c == ' ' && i >= 2 && msg[i-2] == ':'
	}
	return b.String()
}

// cliCommand is one top-level command: its name, the subcommands (or
// workloads, or data sets) it dispatches on, and what runs it.
type cliCommand struct {
	name string
	subs []string // nil: the command takes no subcommand
	run  func(args []string, stdout, stderr io.Writer) error
}

// cliCommands is every top-level command; usage lists them all (a test
// checks that it lists exactly these, with their subcommands).
var cliCommands []cliCommand

func init() {
	cliCommands = []cliCommand{
		{"probe", nil, cmdProbe},
		{"bench", benchWorkloads, cmdBench},
		{"report", nil, cmdReport},
		{"wal", walCommandNames(), cmdWAL},
		{"kv", kvCommandNames(), cmdKV},
		{"state", stateCommandNames(), cmdState},
		{"gen", []string{"events"}, cmdGen},
		{"scan", nil, cmdScan},
		{"version", nil, cmdVersion},
	}
}

const usage = `ringstore — fast, safe storage I/O on io_uring

usage:
  ringstore probe [--dir D] [--json]     kernel, io_uring, backend and O_DIRECT support
  ringstore bench [flags]                the main job: every benchmark with its defaults, side by
                                         side: read, wal, scan, kv, then a quick nexmark (300,000
                                         events); --json OUT writes OUT-read.json ... OUT-nexmark.json
  ringstore bench read|wal|scan|kv|nexmark [flags]
                                         one benchmark ('ringstore bench --help' says what each
                                         runs; --modes list shows a benchmark's modes)
  ringstore report FILE.json... --html OUT | --svg DIR
                                         saved bench reports as one offline HTML page, or each
                                         chart as an SVG file
  ringstore wal append DIR VALUE...      append entries to the log in DIR, durably
  ringstore wal verify|stat DIR          check every byte of the log / count its segments and entries
  ringstore wal dump DIR [flags]         print its entries (--from, --to, --limit, --format)
  ringstore wal repair DIR [--yes]       cut it at its first damage so that it opens again
  ringstore kv stat|get|put|delete|scan|verify DIR ...
                                         the kv store in DIR: stats, get KEY, put KEY VALUE,
                                         delete KEY, scan [--from K] [--to K], verify every block
  ringstore state stat|ls|get DIR ...    the keyed state (package state) in DIR, read-only
  ringstore gen events --rows N --dir D  time-series events as Arrow IPC files with checksum sidecars
  ringstore scan --mode M --query Q F... run an events query over Arrow files (--query list)
  ringstore scan --verify F...           check Arrow files against their checksum sidecars
  ringstore version [--json]             the module version and commit of this binary
  ringstore help                         this text

Run 'ringstore <command> --help' for a command's flags. Exit status: 0 done,
1 failed (a missing kv key, damage found), 2 a mistake in the command line.
--json prints JSON (--json - too, where a flag takes a file: stdout).
Environment: RINGSTORE_IO_URING=false turns io_uring off (only unset or exactly "true" enables it).
`

func main() {
	bench.MaybeChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one command line and returns its exit status: 0, 1 for a
// failure while running, 2 for a mistake in the command line. Help goes to
// stdout; every error is one line on stderr with one "ringstore:" prefix
// (for a usage error, ending with where the help is).
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return 0
	}
	var help *helpText
	if errors.As(err, &help) {
		fmt.Fprint(stdout, help.text)
		return 0
	}
	msg := dedupPrefixes("ringstore: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	msg = strings.TrimPrefix(msg, "ringstore: ")
	var ue *usageError
	if errors.As(err, &ue) {
		where := "ringstore help"
		if c := lookupCommandArgs(args); c != nil {
			where = "ringstore " + c.name
			if len(args) > 1 && slices.Contains(c.subs, args[1]) {
				where += " " + args[1]
			}
			where += " --help"
		}
		fmt.Fprintf(stderr, "ringstore: %s; see '%s'\n", msg, where)
		return 2
	}
	fmt.Fprintf(stderr, "ringstore: %s\n", msg)
	return 1
}

// lookupCommandArgs is the command args names, or nil.
func lookupCommandArgs(args []string) *cliCommand {
	if len(args) == 0 {
		return nil
	}
	return lookupCommand(args[0])
}

func lookupCommand(name string) *cliCommand {
	for i := range cliCommands {
		if cliCommands[i].name == name {
			return &cliCommands[i]
		}
	}
	return nil
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command given")
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "--version":
		return cmdVersion(args[1:], stdout, stderr)
	}
	if c := lookupCommand(args[0]); c != nil {
		return c.run(args[1:], stdout, stderr)
	}
	return usagef("unknown command %q", args[0])
}

// newFlags returns a flag set named for the command ("gen events") that
// reports errors instead of exiting. Its usage text (a synopsis and the
// flags) goes to fs.Output(); parse captures it for --help.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ringstore %s [flags]\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// jsonDash rewrites "--json -" and "--json=-" to "--json" where --json is
// a switch (JSON on stdout): "-" means stdout wherever --json is taken,
// also where it names no file.
func jsonDash(fs *flag.FlagSet, args []string) []string {
	f := fs.Lookup("json")
	if f == nil {
		return args
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
		return args
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		switch a {
		case "-json=-", "--json=-":
			out = append(out, "--json")
			continue
		case "-json", "--json":
			out = append(out, a)
			if i+1 < len(args) && args[i+1] == "-" {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// parse parses flags: --help returns the command's usage (printed on
// stdout by run), a bad flag a one-line usage error; stray positional
// arguments are an error unless allowArgs.
func parse(fs *flag.FlagSet, args []string, allowArgs bool) error {
	args = jsonDash(fs, args)
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpText{buf.String()}
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if !allowArgs && fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
