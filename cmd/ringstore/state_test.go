package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/state"
)

// stateDir writes a small keyed state (a value, a map with a TTL, a list,
// timers) and a checkpoint of it, and returns the state's open backend,
// its directory and the checkpoint's.
func stateDir(t *testing.T) (*state.Backend, string, string) {
	t.Helper()
	dir := filepath.Join(testdir.Direct(t), "state")
	b, err := state.Open(dir, state.Options{MaxKeyGroups: 8, KV: kv.Options{IOMode: ioengine.Syscall, Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := b.Value("counts", 0)
	bids, _ := b.Map("bids", time.Hour)
	names, _ := b.List("names", 0)
	timers, err := b.Timers("fire")
	if err != nil {
		t.Fatal(err)
	}
	mb := b.NewMiniBatch()
	counts.Put(mb, []byte("k1"), nil, []byte("7"))
	counts.Put(mb, []byte("\x00bin"), nil, []byte("\xff"))
	bids.Put(mb, []byte("k1"), []byte("w1"), []byte("u1"), []byte("ten"))
	names.Add(mb, []byte("k1"), nil, []byte("alice"))
	names.Add(mb, []byte("k1"), nil, []byte("bob"))
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := timers.Set(42, []byte("k1"), nil); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(filepath.Dir(dir), "ck")
	if err := b.Checkpoint(context.Background(), ck, []byte("offset=9")); err != nil {
		t.Fatal(err)
	}
	return b, dir, ck
}

// TestStateCommands: stat, ls and get read a state directory (beside its
// open backend: read-only, no lock) and a checkpoint of it.
func TestStateCommands(t *testing.T) {
	b, dir, ck := stateDir(t)
	defer b.Close()
	for _, d := range []string{dir, ck} {
		out := mustCLI(t, "state", "stat", d)
		for _, want := range []string{"key groups  8", "states      4, 5 entries", "meta offset=9", "backend ", "bids", "map", "1h0m0s", "timers"} {
			if !strings.Contains(out, want) {
				t.Errorf("state stat %s lacks %q:\n%s", d, want, out)
			}
		}
	}
	code, out, stderr := runCLI("state", "stat", dir, "--json")
	var st struct {
		MaxKeyGroups int    `json:"max_key_groups"`
		Entries      int    `json:"entries"`
		Meta         string `json:"checkpoint_meta"`
		Backend      string `json:"backend"`
		States       []struct {
			Name       string  `json:"name"`
			Kind       string  `json:"kind"`
			TTLSeconds float64 `json:"ttl_seconds"`
			Entries    int     `json:"entries"`
			KeyGroups  int     `json:"key_groups"`
		} `json:"states"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.MaxKeyGroups != 8 || st.Entries != 5 || st.Meta != "offset=9" || st.Backend == "" || len(st.States) != 4 ||
		st.States[0].Name != "bids" || st.States[0].Kind != "map" || st.States[0].TTLSeconds != 3600 || st.States[1].Entries != 2 {
		t.Errorf("state stat --json: exit %d, %+v\n%s%s", code, st, out, stderr)
	}
	out = mustCLI(t, "state", "ls", dir)
	if !strings.HasPrefix(out, "state ") || strings.Count(out, "\n") != 5 {
		t.Errorf("state ls:\n%s", out)
	}
	if out := mustCLI(t, "state", "ls", dir, "counts"); !strings.Contains(out, `key="\x00bin" ns="" value="\xff"`) || !strings.Contains(out, `key=k1 ns="" value=7`) {
		t.Errorf("state ls counts:\n%s", out)
	}
	if out := mustCLI(t, "state", "ls", dir, "counts", "--limit", "1"); strings.Count(out, "\n") != 1 {
		t.Errorf("state ls --limit 1:\n%s", out)
	}
	if out := mustCLI(t, "state", "get", dir, "bids", "k1"); !strings.Contains(out, "key=k1 ns=w1 user_key=u1 value=ten expires=") {
		t.Errorf("state get bids k1:\n%s", out)
	}
	if out := mustCLI(t, "state", "get", dir, "names", "k1"); !strings.Contains(out, "items=[alice bob]") {
		t.Errorf("state get names k1:\n%s", out)
	}
	if out := mustCLI(t, "state", "get", dir, "fire", "k1"); !strings.Contains(out, "timer=42") {
		t.Errorf("state get fire k1:\n%s", out)
	}
	if out := mustCLI(t, "state", "get", "--hex", dir, "counts", hex.EncodeToString([]byte("\x00bin"))); !strings.Contains(out, "value=ff") {
		t.Errorf("state get --hex:\n%s", out)
	}
	code, out, _ = runCLI("state", "get", dir, "counts", "k1", "--json")
	var e map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || e["value"] != "7" || e["key"] != "k1" {
		t.Errorf("state get --json: exit %d, %s", code, out)
	}
	for _, args := range [][]string{{"stat", dir}, {"ls", dir, "counts"}, {"get", dir, "counts", "k1"}} {
		code, _, stderr := runCLI(append(append([]string{"state"}, args...), "-v", "--io-mode", "syscall")...)
		if code != 0 || !strings.Contains(stderr, "state "+args[0]+": backend syscall") {
			t.Errorf("state %v -v: exit %d, %q", args, code, stderr)
		}
	}
	empty := t.TempDir()
	runCLICases(t, []cliCase{
		{"no command", []string{"state"}, 2, "state: no command given"},
		{"unknown command", []string{"state", "put", dir}, 2, `state: unknown command "put"`},
		{"no dir", []string{"state", "stat"}, 2, "state stat: missing DIR"},
		{"get no key", []string{"state", "get", dir, "counts"}, 2, "state get: missing KEY"},
		{"extra", []string{"state", "ls", dir, "counts", "x"}, 2, `state ls: unexpected argument "x"`},
		{"missing dir", []string{"state", "stat", filepath.Join(empty, "nope")}, 2, "nope"},
		{"not a state", []string{"state", "stat", empty}, 1, "holds no state"},
		{"unknown state", []string{"state", "get", dir, "nope", "k1"}, 1, `no state "nope"`},
		{"absent key", []string{"state", "get", dir, "counts", "zz"}, 1, `state "counts" has no entry for key zz`},
		{"bad hex", []string{"state", "get", "--hex", dir, "counts", "zz"}, 2, `KEY "zz": not hex`},
	})
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a failed state command wrote into %s: %v", empty, ents)
	}
}
