package ioengine_test

// These tests check the runtime switch (RINGSTORE_IO_URING) and the fallback
// the way a user would: in fresh processes, each started with its own
// environment, reading an O_DIRECT file cold and verifying every byte, and
// under strace -f -c, which counts the io_uring system calls the process
// really made. The child processes are this test binary itself: TestMain
// runs the child's part instead of the tests when childEnv is set.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/seccomp"
	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/uring"
)

// The child's instructions, passed in its environment.
const (
	childEnv      = "RINGSTORE_TEST_CHILD"   // "coldread" or "cached": run that child instead of the tests
	fileEnv       = "RINGSTORE_TEST_FILE"    // the pattern file to read
	seccompEnv    = "RINGSTORE_TEST_SECCOMP" // "1": deny io_uring with a seccomp filter first
	laterEnv      = "RINGSTORE_TEST_LATER"   // cached child: "set=VALUE" or "unset", applied after EnvSwitch
	resultPrefix  = "RINGSTORE_TEST_RESULT " // starts the child's one line of JSON on stdout
	fallbackLog   = "ioengine: falling back"
	childBlocks   = 16
	childDeadline = 60 * time.Second
)

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(childEnv); ok {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// childResult is what a child prints, as one line of JSON.
type childResult struct {
	Seccomp string // the "Seccomp:" field of /proc/self/status: "0" none, "2" filter

	// The switch as EnvSwitch returned it. Value is in hex: JSON would
	// replace bytes that are not UTF-8.
	SwitchSet      bool
	SwitchValueHex string
	SwitchEnabled  bool
	Switch         string // Switch.String()

	// The engine New(Options{}) returned and the cold read through it.
	Backend  string
	Reason   string
	FellBack bool
	Enters   uint64
	Syscalls uint64
	Verified int // bytes read and found correct

	// Cold-read child only: a second New(Options{}) in the same process,
	// and ioengine.Fallbacks() after it.
	SecondFellBack  bool
	SecondReason    string
	ProcessFallback uint64

	// Cached child only.
	SwitchAfter   string // Switch.String() after the environment changed
	EnvAfter      string // the variable after the change, for the record
	URingBackend  string // New(Options{Mode: URing}) in the same process
	URingReason   string
	URingEnters   uint64
	URingVerified int

	Error string `json:",omitempty"`
}

// runChild is the child process: it does what childEnv says, prints the
// result and returns the exit code, 0 only when every byte read was right.
func runChild(mode string) int {
	var res childResult
	err := func() error {
		if os.Getenv(seccompEnv) == "1" {
			if err := seccomp.DenyIOURing(); err != nil {
				return err
			}
		}
		res.Seccomp = seccompStatus()
		switch mode {
		case "coldread":
			return childColdRead(&res)
		case "cached":
			return childCached(&res)
		}
		return fmt.Errorf("unknown child mode %q", mode)
	}()
	if err != nil {
		res.Error = err.Error()
	}
	line, jerr := json.Marshal(res)
	if jerr != nil {
		fmt.Fprintln(os.Stderr, "child:", jerr)
		return 2
	}
	fmt.Printf("%s%s\n", resultPrefix, line)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func recordSwitch(res *childResult, sw ioengine.Switch) {
	res.SwitchSet, res.SwitchValueHex, res.SwitchEnabled, res.Switch = sw.Set, hex.EncodeToString([]byte(sw.Value)), sw.Enabled, sw.String()
}

// childColdRead reads the file through an engine in Auto mode, then makes
// a second one, to show that a fallback is logged once per process.
func childColdRead(res *childResult) error {
	recordSwitch(res, ioengine.EnvSwitch())
	e, err := ioengine.New(ioengine.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	res.Backend, res.Reason, res.FellBack = e.Backend().String(), e.FallbackReason(), e.FellBack()
	res.Verified, err = readAndVerify(e, os.Getenv(fileEnv))
	st := e.Stats()
	res.Enters, res.Syscalls = st.Enters, st.Syscalls
	if err != nil {
		return err
	}
	e2, err := ioengine.New(ioengine.Options{})
	if err != nil {
		return err
	}
	res.SecondFellBack, res.SecondReason = e2.FellBack(), e2.FallbackReason()
	res.ProcessFallback = ioengine.Fallbacks()
	return e2.Close()
}

// childCached reads the switch, changes the environment as laterEnv says,
// and then makes an Auto engine, which must follow the value read first,
// and a URing engine, which must ignore the variable.
func childCached(res *childResult) error {
	recordSwitch(res, ioengine.EnvSwitch())
	switch later := os.Getenv(laterEnv); {
	case later == "unset":
		os.Unsetenv(ioengine.EnvVar)
	case strings.HasPrefix(later, "set="):
		os.Setenv(ioengine.EnvVar, strings.TrimPrefix(later, "set="))
	default:
		return fmt.Errorf("%s=%q: want set=VALUE or unset", laterEnv, later)
	}
	if v, ok := os.LookupEnv(ioengine.EnvVar); ok {
		res.EnvAfter = ioengine.EnvVar + "=" + v
	} else {
		res.EnvAfter = ioengine.EnvVar + " unset"
	}
	res.SwitchAfter = ioengine.EnvSwitch().String()

	path := os.Getenv(fileEnv)
	e, err := ioengine.New(ioengine.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	res.Backend, res.Reason, res.FellBack = e.Backend().String(), e.FallbackReason(), e.FellBack()
	if res.Verified, err = readAndVerify(e, path); err != nil {
		return err
	}
	st := e.Stats()
	res.Enters, res.Syscalls = st.Enters, st.Syscalls

	u, err := ioengine.New(ioengine.Options{Mode: ioengine.URing})
	if err != nil {
		return err
	}
	defer u.Close()
	res.URingBackend, res.URingReason = u.Backend().String(), u.FallbackReason()
	if res.URingVerified, err = readAndVerify(u, path); err != nil {
		return err
	}
	res.URingEnters = u.Stats().Enters
	return nil
}

// readAndVerify opens path with O_DIRECT, reads all of it in one ReadBatch
// of BlockSize requests, last block first, into buffers from directio.Alloc,
// and checks every byte against the pattern. It returns the number of bytes
// found correct.
func readAndVerify(e *ioengine.Engine, path string) (int, error) {
	f, err := directio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	blocks := int(fi.Size() / directio.BlockSize)
	if blocks == 0 || fi.Size()%directio.BlockSize != 0 {
		return 0, fmt.Errorf("%s: size %d is not a positive multiple of %d", path, fi.Size(), directio.BlockSize)
	}
	reqs := make([]ioengine.Request, blocks)
	for i := range reqs {
		buf, err := directio.Alloc(directio.BlockSize)
		if err != nil {
			return 0, err
		}
		defer directio.Free(buf)
		reqs[i] = ioengine.Request{Fd: int(f.Fd()), Off: int64(blocks-1-i) * directio.BlockSize, Buf: buf}
	}
	if err := e.ReadBatch(reqs); err != nil {
		return 0, fmt.Errorf("ReadBatch on %s: %w", e.Backend(), err)
	}
	verified := 0
	want := make([]byte, directio.BlockSize)
	for _, r := range reqs {
		if r.N != len(r.Buf) || r.Err != nil {
			return verified, fmt.Errorf("read at %d: %d of %d bytes, err %v", r.Off, r.N, len(r.Buf), r.Err)
		}
		fillPattern(want, r.Off)
		if i := firstDiff(r.Buf, want); i >= 0 {
			return verified, fmt.Errorf("read at %d: byte %d is %#x, want %#x", r.Off, r.Off+int64(i), r.Buf[i], want[i])
		}
		verified += len(r.Buf)
	}
	return verified, nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// fillPattern fills b with the bytes the pattern file holds at off: every
// 8-byte word is a hash of its own file offset, so a block read from the
// wrong place, or not at all, shows.
func fillPattern(b []byte, off int64) {
	for i := 0; i+8 <= len(b); i += 8 {
		x := uint64(off+int64(i))*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
		x ^= x >> 29
		binary.LittleEndian.PutUint64(b[i:], x)
	}
}

// seccompStatus returns the Seccomp field of /proc/self/status.
func seccompStatus() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown: " + err.Error()
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "absent"
}

// writePatternFile writes childBlocks blocks of the pattern with O_DIRECT
// and fsync, so the data is on the device and not in the page cache.
func writePatternFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(testdir.Direct(t), "pattern")
	f, err := directio.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := directio.Alloc(childBlocks * directio.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	defer directio.Free(buf)
	fillPattern(buf, 0)
	if _, err := f.WriteAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// uringHere reports whether this machine gives an engine io_uring at all
// (a kernel with it, no seccomp filter against it, compiled in), and if not
// why; the expectations for the enabled cases depend on it.
func uringHere(t *testing.T) (bool, string) {
	t.Helper()
	e, err := ioengine.New(ioengine.Options{Mode: ioengine.URing, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Backend() != ioengine.BackendURing {
		t.Logf("io_uring is not available here, so the enabled cases must fall back: %s", e.FallbackReason())
		return false, e.FallbackReason()
	}
	return true, ""
}

// childRun is one child process's outcome.
type childRun struct {
	res    childResult
	stderr string
}

// runChildProcess runs this test binary as a child with env, under the
// command prefix wrap (strace and its flags) if any, and returns its result.
// It fails the test unless the child exits 0 and prints a result.
func runChildProcess(t *testing.T, env []string, wrap ...string) childRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), childDeadline)
	defer cancel()
	args := append(slices.Clone(wrap), os.Args[0], "-test.run=^$")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	run := childRun{stderr: stderr.String()}
	found := false
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			if jerr := json.Unmarshal([]byte(line), &run.res); jerr != nil {
				t.Fatalf("child result %q: %v", line, jerr)
			}
			found = true
		}
	}
	if err != nil || !found {
		t.Fatalf("child %q: %v (result found: %v)\nstdout:\n%s\nstderr:\n%s", args, err, found, stdout.String(), stderr.String())
	}
	return run
}

// syscallCount is one row of strace -c's table.
type syscallCount struct{ calls, errors int }

// parseStraceSummary reads the table strace -c writes:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 59.12    0.669793         728       919       150 futex
//	 20.51    0.232419         124      1864           nanosleep
//	------ ----------- ----------- --------- --------- ----------------
//	100.00    1.132928         101     11111       160 total
//
// The errors column is blank when a call never failed. A process that used
// several ABIs gets one table per ABI; their rows are added up.
func parseStraceSummary(text string) (map[string]syscallCount, error) {
	counts := map[string]syscallCount{}
	tables := 0
	header, inTable := false, false
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "%":
			if strings.Join(f, " ") != "% time seconds usecs/call calls errors syscall" {
				return nil, fmt.Errorf("unexpected strace -c header %q", strings.TrimSpace(line))
			}
			header = true
		case len(f) > 0 && strings.Trim(f[0], "-") == "":
			if header {
				header, inTable = false, true
				tables++
			} else {
				inTable = false // the line above "total"
			}
		case inTable:
			var c syscallCount
			var err error
			switch len(f) {
			case 5: // no errors
				c.calls, err = strconv.Atoi(f[3])
			case 6:
				c.calls, err = strconv.Atoi(f[3])
				if err == nil {
					c.errors, err = strconv.Atoi(f[4])
				}
			default:
				err = errors.New("wrong number of columns")
			}
			if err != nil {
				return nil, fmt.Errorf("strace -c row %q: %v", strings.TrimSpace(line), err)
			}
			name := f[len(f)-1]
			counts[name] = syscallCount{counts[name].calls + c.calls, counts[name].errors + c.errors}
		}
	}
	if tables == 0 {
		return nil, errors.New("no strace -c table found")
	}
	return counts, nil
}

var (
	straceOnce sync.Once
	straceErr  error
)

// straceUsable skips t unless strace is installed and can trace a child
// here (ptrace may be forbidden in a container).
func straceUsable(t *testing.T) {
	t.Helper()
	straceOnce.Do(func() {
		if _, err := exec.LookPath("strace"); err != nil {
			straceErr = fmt.Errorf("strace is not installed: %v", err)
			return
		}
		out := filepath.Join(os.TempDir(), fmt.Sprintf("ringstore-strace-check-%d", os.Getpid()))
		defer os.Remove(out)
		ctx, cancel := context.WithTimeout(context.Background(), childDeadline)
		defer cancel()
		cmd := exec.CommandContext(ctx, "strace", "-f", "-c", "-o", out, "--", os.Args[0], "-test.run=^$")
		cmd.Env = testchild.Environ()
		if msg, err := cmd.CombinedOutput(); err != nil {
			straceErr = fmt.Errorf("strace cannot trace here: %v: %s", err, msg)
			return
		}
		data, err := os.ReadFile(out)
		if err == nil {
			_, err = parseStraceSummary(string(data))
		}
		if err != nil {
			straceErr = fmt.Errorf("strace -c gave no usable summary: %v", err)
		}
	})
	if straceErr != nil {
		t.Skip(straceErr)
	}
}

// TestProcessSwitchColdRead runs a fresh child per value of
// RINGSTORE_IO_URING (and once with io_uring denied by seccomp), each
// reading a file cold with O_DIRECT through New(Options{}), and checks the
// backend, the reason, the bytes, and, under strace, the io_uring system
// calls the child really made.
func TestProcessSwitchColdRead(t *testing.T) {
	path := writePatternFile(t)
	uringOK, uringWhyNot := uringHere(t)
	parentSeccomp := seccompStatus()

	const unset = "\x00unset" // not a value an environment can hold
	cases := []struct {
		name    string
		value   string // of EnvVar, or unset
		seccomp bool   // deny io_uring with a seccomp filter
		enabled bool   // what the switch must say
	}{
		{"unset", unset, false, true},
		{"true", "true", false, true},
		{"false", "false", false, false},
		{"empty", "", false, false},
		{"TRUE", "TRUE", false, false},
		{"invalid_word", "yes please", false, false},
		{"non_UTF-8", "\xff\xfe", false, false},
		{"unset_seccomp", unset, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var extra []string
			if tc.value != unset {
				extra = append(extra, ioengine.EnvVar+"="+tc.value)
			}
			if tc.seccomp {
				extra = append(extra, seccompEnv+"=1")
			}
			extra = append(extra, childEnv+"=coldread", fileEnv+"="+path)
			env := testchild.Environ(extra...)

			// On io_uring: the enabled cases, when this machine has it.
			// Fell back: the enabled cases without it, and seccomp.
			onURing := tc.enabled && !tc.seccomp && uringOK
			fellBack := tc.enabled && !onURing

			check := func(t *testing.T, run childRun) {
				t.Helper()
				r := run.res
				t.Logf("backend=%s fellBack=%v enters=%d syscalls=%d verified=%d seccomp=%s reason=%q",
					r.Backend, r.FellBack, r.Enters, r.Syscalls, r.Verified, r.Seccomp, r.Reason)
				if r.Verified != childBlocks*directio.BlockSize {
					t.Errorf("verified %d bytes, want %d", r.Verified, childBlocks*directio.BlockSize)
				}
				if r.SwitchSet != (tc.value != unset) || r.SwitchEnabled != tc.enabled {
					t.Errorf("EnvSwitch() = %s (set %v, enabled %v), want set %v, enabled %v",
						r.Switch, r.SwitchSet, r.SwitchEnabled, tc.value != unset, tc.enabled)
				}
				if tc.value != unset && r.SwitchValueHex != hex.EncodeToString([]byte(tc.value)) {
					t.Errorf("EnvSwitch().Value = %s in hex, want %x", r.SwitchValueHex, tc.value)
				}
				wantSeccomp := parentSeccomp
				if tc.seccomp {
					wantSeccomp = "2"
				}
				if r.Seccomp != wantSeccomp {
					t.Errorf("child's seccomp mode = %s, want %s", r.Seccomp, wantSeccomp)
				}
				if r.FellBack != fellBack || r.SecondFellBack != fellBack {
					t.Errorf("FellBack() = %v (second engine %v), want %v", r.FellBack, r.SecondFellBack, fellBack)
				}
				logged := strings.Count(run.stderr, fallbackLog)
				switch {
				case onURing:
					if r.Backend != "uring" || r.Reason != "" || r.Enters == 0 || r.Syscalls != 0 {
						t.Errorf("want uring with no reason, enters > 0 and no pread calls; got %s, reason %q, enters %d, syscalls %d",
							r.Backend, r.Reason, r.Enters, r.Syscalls)
					}
					if logged != 0 {
						t.Errorf("the child logged a fallback:\n%s", run.stderr)
					}
				case !tc.enabled:
					if r.Backend != "syscall" || r.Enters != 0 || r.Syscalls < childBlocks {
						t.Errorf("want syscall with no enters and >= %d pread calls; got %s, enters %d, syscalls %d",
							childBlocks, r.Backend, r.Enters, r.Syscalls)
					}
					// The reason names the variable and shows the value
					// readably, whatever its bytes.
					if !strings.Contains(r.Reason, ioengine.EnvVar) || !strings.Contains(r.Reason, "disabled") ||
						!strings.Contains(r.Reason, strconv.Quote(tc.value)) || !utf8.ValidString(r.Reason) {
						t.Errorf("reason %q: want it to name %s, the value %s and \"disabled\"", r.Reason, ioengine.EnvVar, strconv.Quote(tc.value))
					}
				default: // fell back
					if r.Backend != "syscall" || r.Reason == "" || r.Enters != 0 || r.Syscalls < childBlocks {
						t.Errorf("want a fallback to syscall with a reason, no enters and >= %d pread calls; got %s, reason %q, enters %d, syscalls %d",
							childBlocks, r.Backend, r.Reason, r.Enters, r.Syscalls)
					}
					if r.SecondReason != r.Reason {
						t.Errorf("second engine's reason %q differs from the first's %q", r.SecondReason, r.Reason)
					}
					if r.ProcessFallback != 2 {
						t.Errorf("Fallbacks() = %d after two engines fell back, want 2", r.ProcessFallback)
					}
					// Logged once per process and reason, though two
					// engines fell back.
					if logged != 1 {
						t.Errorf("the fallback was logged %d times, want once; stderr:\n%s", logged, run.stderr)
					}
					switch {
					case tc.seccomp && !uring.Compiled:
						t.Logf("io_uring is not compiled in, so the filter has nothing to refuse: %s", r.Reason)
					case tc.seccomp:
						low := strings.ToLower(r.Reason)
						if !strings.Contains(low, "operation not permitted") && !strings.Contains(r.Reason, "EPERM") ||
							!strings.Contains(low, "seccomp") {
							t.Errorf("reason %q: want EPERM (operation not permitted) and a mention of seccomp", r.Reason)
						}
					default:
						t.Logf("falls back because this machine has no io_uring: %s", uringWhyNot)
					}
				}
			}

			t.Run("plain", func(t *testing.T) {
				check(t, runChildProcess(t, env))
			})
			t.Run("strace", func(t *testing.T) {
				straceUsable(t)
				out := filepath.Join(t.TempDir(), "strace.txt")
				run := runChildProcess(t, env, "strace", "-f", "-c", "-o", out, "--")
				check(t, run)
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				counts, err := parseStraceSummary(string(data))
				if err != nil {
					t.Fatalf("%v\n%s", err, data)
				}
				setup, enter, pread := counts["io_uring_setup"], counts["io_uring_enter"], counts["pread64"]
				t.Logf("strace -f -c: io_uring_setup %d calls (%d errors), io_uring_enter %d calls (%d errors), pread64 %d calls",
					setup.calls, setup.errors, enter.calls, enter.errors, pread.calls)
				switch {
				case onURing:
					if setup.calls == 0 || enter.calls == 0 {
						t.Errorf("want io_uring_setup and io_uring_enter calls; strace -c says:\n%s", data)
					}
				case !tc.enabled:
					// Disabled by the variable, the engine does not even
					// try a ring.
					if setup.calls != 0 || enter.calls != 0 || pread.calls < childBlocks {
						t.Errorf("want no io_uring calls at all and >= %d pread64; strace -c says:\n%s", childBlocks, data)
					}
				default:
					// Tried, refused every time, and nothing entered.
					if enter.calls != 0 || pread.calls < childBlocks {
						t.Errorf("want no io_uring_enter and >= %d pread64; strace -c says:\n%s", childBlocks, data)
					}
					if tc.seccomp && uring.Compiled && (setup.calls == 0 || setup.errors != setup.calls) {
						t.Errorf("want io_uring_setup attempted and failing every time; strace -c says:\n%s", data)
					}
				}
			})
		})
	}
}

// TestProcessSwitchCachedAfterSetenv shows that the switch is read once
// per process: a child reads it, changes RINGSTORE_IO_URING, and an Auto
// engine made afterwards still follows the first value. The same child
// shows that Options{Mode: URing} ignores the variable.
func TestProcessSwitchCachedAfterSetenv(t *testing.T) {
	path := writePatternFile(t)
	uringOK, _ := uringHere(t)
	uringOr := func(otherwise string) string {
		if uringOK {
			return "uring"
		}
		return otherwise
	}
	cases := []struct {
		name        string
		start       []string // EnvVar at start; nil: unset
		later       string   // laterEnv
		wantBackend string   // of the Auto engine
		wantEnabled bool
	}{
		{"false_then_true", []string{ioengine.EnvVar + "=false"}, "set=true", "syscall", false},
		{"unset_then_false", nil, "set=false", uringOr("syscall"), true},
		{"true_then_unset_is_still_true", []string{ioengine.EnvVar + "=true"}, "unset", uringOr("syscall"), true},
		{"false_then_unset", []string{ioengine.EnvVar + "=false"}, "unset", "syscall", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := testchild.Environ(append(tc.start, childEnv+"=cached", fileEnv+"="+path, laterEnv+"="+tc.later)...)
			r := runChildProcess(t, env).res
			t.Logf("switch %q, then %s; EnvSwitch() now %q; Auto: %s (reason %q, enters %d); URing: %s (enters %d)",
				r.Switch, r.EnvAfter, r.SwitchAfter, r.Backend, r.Reason, r.Enters, r.URingBackend, r.URingEnters)

			if r.SwitchEnabled != tc.wantEnabled || r.SwitchAfter != r.Switch {
				t.Errorf("EnvSwitch() = %q, then %q after the change; want enabled %v both times", r.Switch, r.SwitchAfter, tc.wantEnabled)
			}
			// The change itself took effect in the environment.
			if later, ok := strings.CutPrefix(tc.later, "set="); ok && r.EnvAfter != ioengine.EnvVar+"="+later ||
				tc.later == "unset" && r.EnvAfter != ioengine.EnvVar+" unset" {
				t.Errorf("the environment after the change is %q, want it to follow %s", r.EnvAfter, tc.later)
			}
			if r.Backend != tc.wantBackend {
				t.Errorf("Auto engine on %s after the change, want %s (the value read first)", r.Backend, tc.wantBackend)
			}
			if !tc.wantEnabled && (!strings.Contains(r.Reason, ioengine.EnvVar) || !strings.Contains(r.Reason, `"false"`)) {
				t.Errorf("reason %q: want it to name %s and the value it was read with, \"false\"", r.Reason, ioengine.EnvVar)
			}
			if r.Verified != childBlocks*directio.BlockSize || r.URingVerified != childBlocks*directio.BlockSize {
				t.Errorf("verified %d and %d bytes, want %d each", r.Verified, r.URingVerified, childBlocks*directio.BlockSize)
			}
			// Mode URing overrides the variable, whatever it said.
			if uringOK && (r.URingBackend != "uring" || r.URingReason != "" || r.URingEnters == 0) {
				t.Errorf("Options{Mode: URing}: backend %s, reason %q, enters %d; want uring, no reason, enters > 0",
					r.URingBackend, r.URingReason, r.URingEnters)
			}
		})
	}
}

// TestProcessSwitchStraceParser pins the parser to the format strace prints.
func TestProcessSwitchStraceParser(t *testing.T) {
	const table = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 59.12    0.669793         728       919       150 futex
  4.32    0.048943          68       719           io_uring_enter
  0.01    0.000095          47         2         2 io_uring_setup
------ ----------- ----------- --------- --------- ------------------
100.00    1.132928         101     11111       160 total
System call usage summary for 32 bit mode:
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
100.00    0.000001           1         1         1 io_uring_setup
------ ----------- ----------- --------- --------- ------------------
100.00    0.000001           1         1         1 total
`
	got, err := parseStraceSummary(table)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]syscallCount{"futex": {919, 150}, "io_uring_enter": {719, 0}, "io_uring_setup": {3, 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parseStraceSummary("strace: ptrace(PTRACE_TRACEME): Operation not permitted\n"); err == nil {
		t.Error("no error for output without a table")
	}
}
