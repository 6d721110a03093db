package main

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// helpListing returns the commands the top-level help lists, as
// "command" and "command sub", from its lines "  ringstore CMD SUB|SUB ...".
func helpListing(help string) map[string]bool {
	got := map[string]bool{}
	for _, line := range strings.Split(help, "\n") {
		cmd, ok := strings.CutPrefix(line, "  ringstore ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "  ") // the description follows two spaces
		f := strings.Fields(cmd)
		got[f[0]] = true
		if len(f) > 1 && strings.Trim(f[1], "abcdefghijklmnopqrstuvwxyz|") == "" {
			for _, sub := range strings.Split(f[1], "|") {
				got[f[0]+" "+sub] = true
			}
		}
	}
	return got
}

// TestHelpListsEveryCommand: the top-level help lists exactly the commands
// and subcommands that dispatch knows (cliCommands), so the two cannot
// drift; it says what the main job runs and names report --svg.
func TestHelpListsEveryCommand(t *testing.T) {
	code, help, _ := runCLI("help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	listed := helpListing(help)
	want := map[string]bool{"help": true}
	for _, c := range cliCommands {
		want[c.name] = true
		for _, sub := range c.subs {
			want[c.name+" "+sub] = true
		}
	}
	var missing, extra []string
	for k := range want {
		if !listed[k] {
			missing = append(missing, k)
		}
	}
	for k := range listed {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("the help and the command table disagree: not in the help %q; in the help but not dispatched %q\n%s", missing, extra, help)
	}
	for _, sub := range []string{"bench nexmark", "wal append", "kv verify", "state stat"} {
		if !listed[sub] {
			t.Errorf("help does not list %q", sub)
		}
	}
	for _, want := range []string{"--svg DIR", "the main job", "read, wal, scan, kv, then a quick nexmark"} {
		if !strings.Contains(help, want) {
			t.Errorf("help does not say %q", want)
		}
	}
	// Every command the table has dispatches (no "unknown command").
	for _, c := range cliCommands {
		for _, sub := range append([]string{""}, c.subs...) {
			args := []string{c.name}
			if sub != "" {
				args = append(args, sub)
			}
			if _, _, stderr := runCLI(append(args, "--help")...); strings.Contains(stderr, "unknown") {
				t.Errorf("%v is in the table but does not dispatch: %s", args, stderr)
			}
		}
	}
}

// TestSubcommandHelp: bench --help lists its workloads and what the main
// job runs; kv --help says which commands take the store's lock; every
// usage text names each subcommand its dispatch knows.
func TestSubcommandHelp(t *testing.T) {
	_, out, _ := runCLI("bench", "--help")
	for _, w := range benchWorkloads {
		if !strings.Contains(out, "\n  "+w+" ") {
			t.Errorf("bench --help does not list the workload %q:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "-modes") && !strings.Contains(out, "--modes list") {
		t.Errorf("bench --help does not mention --modes list:\n%s", out)
	}
	if !strings.Contains(out, "Without a workload name every benchmark runs") || !strings.Contains(out, "-trials") {
		t.Errorf("bench --help lacks the main job or its flags:\n%s", out)
	}
	_, out, _ = runCLI("kv", "--help")
	if !strings.Contains(out, "put and delete take the store's lock") || !strings.Contains(out, "read-only: no lock") {
		t.Errorf("kv --help does not say which commands take the lock:\n%s", out)
	}
	for cmd, subs := range map[string][]string{"kv": kvCommandNames(), "wal": walCommandNames(), "state": stateCommandNames()} {
		_, out, _ := runCLI(cmd, "--help")
		for _, s := range subs {
			if !strings.Contains(out, "\n  "+s+" ") {
				t.Errorf("%s --help does not list %q:\n%s", cmd, s, out)
			}
		}
	}
	if !slices.Equal(cliCommands[1].subs, benchWorkloads) {
		t.Errorf("bench's subcommands %v are not its workloads %v", cliCommands[1].subs, benchWorkloads)
	}
}

// TestDedupPrefixes: a package's or command's prefix is said once, however
// many layers wrapped the error.
func TestDedupPrefixes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ringstore: kv get: kv: wal: db/wal/1.seg at offset 40: wal: truncated", "ringstore: kv get: wal: db/wal/1.seg at offset 40: truncated"},
		{"ringstore: wal stat db/wal: wal: db/wal/1.seg at offset 0: corrupt", "ringstore: wal stat db/wal: db/wal/1.seg at offset 0: corrupt"},
		{"ringstore: ringstore: scan: arrowscan: f.arrow: arrowscan: short read (arrowscan: x)", "ringstore: scan: arrowscan: f.arrow: short read (x)"},
		{"ringstore: kv put: key walrus: wal is full", "ringstore: kv put: key walrus: wal is full"},
		{"ringstore: state get: no state \"kv\" in db", "ringstore: state get: no state \"kv\" in db"},
	} {
		if got := dedupPrefixes(c.in); got != c.want {
			t.Errorf("dedupPrefixes(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestBenchModesList: --modes list prints every workload's modes and what
// they need, running nothing: no file is made in --dir, even one that does
// not take O_DIRECT; the modes Run builds are checked against the same
// lists (bench.CheckListed), so the listing cannot drift from the runs.
func TestBenchModesList(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]string{
		"read":    {"serial-pread", "uring-b64", "fio-qd64"},
		"wal":     {"fsync-per-write", "ringstore-uring-w64", "etcd-wal-w64", "kv-uring-w64"},
		"scan":    {"mmap", "pool", "memory", "device"},
		"kv":      {"ringstore-multiget-uring", "pebble-get-serial", "device-multiget-depth"},
		"nexmark": {"q1-on", "q1-off", "large-q1-on", "large-device-b64"},
	}
	for _, w := range benchWorkloads {
		start := time.Now()
		code, out, stderr := runCLI("bench", w, "--modes", "list", "--dir", dir, "--queries", "q1")
		if w != "nexmark" {
			code, out, stderr = runCLI("bench", w, "--modes", "list", "--dir", dir)
		}
		if code != 0 || stderr != "" || !strings.HasPrefix(out, "mode ") {
			t.Errorf("bench %s --modes list: exit %d, stderr %q\n%s", w, code, stderr, out)
		}
		for _, m := range want[w] {
			if !strings.Contains(out, "\n"+m+" ") {
				t.Errorf("bench %s --modes list does not list %s:\n%s", w, m, out)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("bench %s --modes list took %s: it does work", w, d)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("--modes list made files in --dir: %v", ents)
	}
}
