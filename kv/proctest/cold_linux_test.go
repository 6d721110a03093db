package proctest

// TestColdMultiGet is issue 5's cold-SST pinned test: block cache disabled,
// data flushed to SST files, and a MultiGet run before any Get, so no cache
// can hide the read path. Each case runs in a fresh child process: with the
// switch on, the batch must reach the kernel through io_uring_enter and no
// pread64; off (RINGSTORE_IO_URING=false), and with io_uring_setup denied
// by a seccomp filter, no io_uring call at all. The values are checked in
// every mode, and strace -f (when it can run here) counts the system calls
// between two marker calls around the MultiGet.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/seccomp"
	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

const (
	childEnv     = "RINGSTORE_TEST_KVCHILD" // the store's directory: run the child instead of the tests
	seccompEnv   = "RINGSTORE_TEST_SECCOMP" // "1": deny io_uring first
	resultPrefix = "RINGSTORE_TEST_RESULT "
	markerBegin  = "/ringstore-test-marker-begin"
	markerEnd    = "/ringstore-test-marker-end"
	numKeys      = 4000
	batchKeys    = 64
)

func TestMain(m *testing.M) {
	if dir, ok := os.LookupEnv(childEnv); ok {
		os.Exit(runChild(dir))
	}
	os.Exit(m.Run())
}

func key(i int) []byte { return []byte(fmt.Sprintf("state/%08d", i*7919%numKeys)) }

func value(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("v%08d|", i*7919%numKeys)), 30)
}

// batch returns the keys the child looks up: spread over the key space,
// one in nine absent.
func batch() (keys [][]byte, present []bool) {
	for j := 0; j < batchKeys; j++ {
		i := (j*61 + 5) % numKeys
		if j%9 == 8 {
			keys, present = append(keys, []byte(fmt.Sprintf("absent/%d", j))), append(present, false)
			continue
		}
		keys, present = append(keys, key(i)), append(present, true)
	}
	return keys, present
}

type result struct {
	Backend, Reason string
	Enters          uint64 // io_uring_enter calls of the engine during the MultiGet
	BlockReads      uint64
	Rounds          uint64
	Gets            uint64
	Verified        int
	Error           string `json:",omitempty"`
}

func runChild(dir string) int {
	var res result
	err := func() error {
		if os.Getenv(seccompEnv) == "1" {
			if err := seccomp.DenyIOURing(); err != nil {
				return err
			}
		}
		db, err := kv.Open(dir, kv.Options{NoBlockCache: true, Logf: func(string, ...any) {}})
		if err != nil {
			return err
		}
		defer db.Close()
		st := db.Stats()
		res.Backend, res.Reason = st.Backend.String(), st.FallbackCause
		keys, present := batch()
		before := st.Engine.Enters
		unix.Access(markerBegin, unix.F_OK)
		vals, found, err := db.MultiGet(keys)
		unix.Access(markerEnd, unix.F_OK)
		if err != nil {
			return err
		}
		st = db.Stats()
		res.Enters, res.BlockReads, res.Rounds, res.Gets = st.Engine.Enters-before, st.BlockReads, st.ReadRounds, st.Gets
		for j, k := range keys {
			if found[j] != present[j] {
				return fmt.Errorf("key %q: found %v, want %v", k, found[j], present[j])
			}
			if present[j] {
				var i int
				fmt.Sscanf(string(k), "state/%d", &i)
				want := bytes.Repeat([]byte(fmt.Sprintf("v%08d|", i)), 30)
				if !bytes.Equal(vals[j], want) {
					return fmt.Errorf("key %q: value %.40q…, want %.40q…", k, vals[j], want)
				}
			}
			res.Verified++
		}
		return nil
	}()
	if err != nil {
		res.Error = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", resultPrefix, line)
	if err != nil {
		return 1
	}
	return 0
}

// buildStore writes the keys, flushes them to SST files and closes the store.
func buildStore(t *testing.T) string {
	dir := filepath.Join(testdir.Direct(t), "db")
	db, err := kv.Open(dir, kv.Options{Logf: t.Logf, MemtableSize: 256 << 10, TargetFileSize: 256 << 10, BaseLevelSize: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var b kv.Batch
	for i := 0; i < numKeys; i++ {
		b.Put(key(i), value(i))
		if b.Len() == 500 {
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	tables := 0
	for _, l := range st.Levels {
		tables += l.Tables
	}
	if st.MemtableBytes > 0 && tables < 2 {
		t.Fatalf("the data did not reach several tables: %s", st)
	}
	t.Logf("store: %d tables", tables)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runChildProcess runs the child under wrap (strace) and returns its result.
func runChildProcess(t *testing.T, env []string, wrap ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	args := append(append([]string(nil), wrap...), os.Args[0], "-test.run=^$")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res result
	found := false
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			if jerr := json.Unmarshal([]byte(line), &res); jerr != nil {
				t.Fatalf("child result %q: %v", line, jerr)
			}
			found = true
		}
	}
	if err != nil || !found {
		t.Fatalf("child %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return res
}

// countBetweenMarkers counts, in an strace -f log, the calls of each name
// made after the begin marker and before the end marker.
func countBetweenMarkers(log string) (map[string]int, error) {
	counts := map[string]int{}
	in, sawBegin, sawEnd := false, false, false
	for line := range strings.Lines(log) {
		switch {
		case strings.Contains(line, markerBegin):
			in, sawBegin = true, true
			continue
		case strings.Contains(line, markerEnd):
			in, sawEnd = false, true
			continue
		}
		if !in {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		call := f[1] // "PID call(args..." or "PID <... call resumed>"
		if strings.HasPrefix(call, "<...") && len(f) > 2 {
			continue // the end of a call counted at its start
		}
		if i := strings.IndexByte(call, '('); i > 0 {
			counts[call[:i]]++
		}
	}
	if !sawBegin || !sawEnd {
		return nil, fmt.Errorf("markers not found in the strace log (begin %v, end %v)", sawBegin, sawEnd)
	}
	return counts, nil
}

func straceWorks(t *testing.T) bool {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Logf("strace is not installed: the system calls are not counted from outside (%v)", err)
		return false
	}
	out := filepath.Join(t.TempDir(), "check.strace")
	cmd := exec.Command("strace", "-f", "-o", out, "--", "/bin/true")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Logf("strace cannot trace here: %v: %s", err, msg)
		return false
	}
	return true
}

func TestColdMultiGet(t *testing.T) {
	dir := buildStore(t)
	canStrace := straceWorks(t)
	probe, err := ioengine.New(ioengine.Options{Mode: ioengine.URing, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	uringOK := probe.Backend() == ioengine.BackendURing
	probe.Close()
	cases := []struct {
		name      string
		env       []string
		wantURing bool
	}{
		{"switch_on", nil, uringOK},
		{"switch_off", []string{ioengine.EnvVar + "=false"}, false},
		{"seccomp_denied", []string{seccompEnv + "=1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := testchild.Environ(append(tc.env, childEnv+"="+dir)...)
			var wrap []string
			logPath := filepath.Join(t.TempDir(), "child.strace")
			if canStrace {
				wrap = []string{"strace", "-f", "-o", logPath, "-e", "trace=faccessat,faccessat2,access,pread64,preadv,preadv2,io_uring_enter,io_uring_setup", "--"}
			}
			res := runChildProcess(t, env, wrap...)
			t.Logf("child: %+v", res)
			if res.Verified != batchKeys {
				t.Fatalf("verified %d of %d keys", res.Verified, batchKeys)
			}
			if res.Gets != 0 || res.Rounds == 0 || res.BlockReads == 0 {
				t.Fatalf("the MultiGet did not read blocks cold (gets %d, rounds %d, blocks %d)", res.Gets, res.Rounds, res.BlockReads)
			}
			if tc.wantURing {
				if res.Backend != "uring" || res.Enters == 0 {
					t.Fatalf("backend %s with %d io_uring_enter calls during the MultiGet; want io_uring", res.Backend, res.Enters)
				}
			} else {
				if res.Backend != "syscall" || res.Enters != 0 {
					t.Fatalf("backend %s with %d enters; want the syscall backend", res.Backend, res.Enters)
				}
				if tc.name == "seccomp_denied" && uringOK && !strings.Contains(res.Reason, "EPERM") && !strings.Contains(res.Reason, "operation not permitted") {
					t.Errorf("fallback reason %q does not name the refusal", res.Reason)
				}
			}
			if !canStrace {
				return
			}
			data, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			counts, err := countBetweenMarkers(string(data))
			if err != nil {
				t.Fatal(err)
			}
			preads := counts["pread64"] + counts["preadv"] + counts["preadv2"]
			t.Logf("strace, during the MultiGet: %d io_uring_enter, %d pread64/preadv", counts["io_uring_enter"], preads)
			if tc.wantURing {
				if counts["io_uring_enter"] == 0 || preads != 0 {
					t.Fatalf("switch on: want io_uring_enter calls and no pread, got %v", counts)
				}
			} else {
				if counts["io_uring_enter"] != 0 || preads == 0 {
					t.Fatalf("%s: want preads and no io_uring_enter, got %v", tc.name, counts)
				}
				if n := strings.Count(string(data), "io_uring_enter("); n != 0 {
					t.Fatalf("%s: %d io_uring_enter calls in the whole process", tc.name, n)
				}
			}
		})
	}
}
