//go:build linux && !ringstore_nouring

package uring_test

// Tests of the ring itself against the running kernel: NOP round trips,
// a full SQ, CQ overflow, setup errors, the single-issuer rule, the opcode
// probe, waits with a timeout, Close and the counters. They re-express
// liburing's test/nop.c, sq-full.c, cq-overflow.c, single-issuer.c,
// probe.c and timeout.c. A fake ring proves nothing about io_uring, so
// every test here talks to the kernel; where io_uring is refused (seccomp,
// kernel.io_uring_disabled, an old kernel) they skip.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/uring"
)

// hangTimeout bounds every wait for a completion, so that a lost
// completion fails the test instead of hanging it.
const hangTimeout = 10 * time.Second

// ringConfig is a ring configuration the behavioural tests run under.
type ringConfig struct {
	name string
	cfg  uring.Config
}

// ringConfigs are the ways ringstore sets up a ring: the default flags
// (COOP_TASKRUN), one issuer (SINGLE_ISSUER|DEFER_TASKRUN), a kernel
// submission thread (SQPOLL), and both (SQPOLL|SINGLE_ISSUER).
var ringConfigs = []ringConfig{
	{"default", uring.Config{}},
	{"single-issuer", uring.Config{SingleIssuer: true}},
	{"sqpoll", uring.Config{SQPoll: true}},
	{"sqpoll-single-issuer", uring.Config{SQPoll: true, SingleIssuer: true}},
	{"prompt-taskrun", uring.Config{PromptTaskrun: true}},
}

// TestPromptTaskrun: a ring set up with PromptTaskrun has neither
// COOP_TASKRUN nor DEFER_TASKRUN, even with SingleIssuer; the default ring
// has COOP_TASKRUN where the kernel takes it (5.19 on).
func TestPromptTaskrun(t *testing.T) {
	for _, cfg := range []uring.Config{{PromptTaskrun: true}, {PromptTaskrun: true, SingleIssuer: true}} {
		r := newRing(t, cfg)
		if f := r.SetupFlags(); f&(uring.SetupCoopTaskrun|uring.SetupDeferTaskrun) != 0 {
			t.Errorf("Config %+v: flags %s, want no COOP_TASKRUN or DEFER_TASKRUN", cfg, uring.SetupFlagString(f))
		}
	}
	if f := newRing(t, uring.Config{}).SetupFlags(); f&uring.SetupCoopTaskrun == 0 {
		t.Logf("the default ring has no COOP_TASKRUN (flags %s): an older kernel", uring.SetupFlagString(f))
	}
}

// with returns c's configuration with the queue sizes set.
func (c ringConfig) with(entries, cqEntries uint32) uring.Config {
	cfg := c.cfg
	cfg.Entries, cfg.CQEntries = entries, cqEntries
	return cfg
}

// skipIfUnavailable skips the test when err says the kernel or a sandbox
// refuses io_uring (EPERM from seccomp or kernel.io_uring_disabled, ENOSYS
// from an old kernel or a syscall filter).
func skipIfUnavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("io_uring unavailable: %v", err)
	}
}

// newRing sets up a ring for the test and closes it when the test ends.
// A SingleIssuer ring may only be entered from the thread that made it, so
// the test goroutine is locked to its OS thread until after Close.
func newRing(t testing.TB, cfg uring.Config) *uring.Ring {
	t.Helper()
	if cfg.SingleIssuer {
		runtime.LockOSThread()
		t.Cleanup(runtime.UnlockOSThread) // runs after Close below
	}
	r, err := uring.New(cfg)
	if err != nil {
		skipIfUnavailable(t, err)
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// waitCQEs submits what is queued and returns the next n completions,
// consumed, in the order the kernel posted them.
func waitCQEs(t testing.TB, r *uring.Ring, n int) []uring.CQE {
	t.Helper()
	out := make([]uring.CQE, 0, n)
	buf := make([]uring.CQE, 64)
	for len(out) < n {
		k := r.ReapCQEs(buf[:min(len(buf), n-len(out))])
		out = append(out, buf[:k]...)
		if k > 0 {
			continue
		}
		if _, err := r.WaitTimeout(1, hangTimeout); err != nil {
			t.Fatalf("waiting for completion %d of %d: %v", len(out)+1, n, err)
		}
	}
	return out
}

// waitSQSpace waits until GetSQE can hand out want SQEs. With SQPOLL the
// kernel thread publishes the SQ head after it has posted the batch's
// completions, so seeing the completions does not mean the slots are free.
func waitSQSpace(t testing.TB, r *uring.Ring, want uint32) {
	t.Helper()
	deadline := time.Now().Add(hangTimeout)
	for r.SQSpace() < want {
		if time.Now().After(deadline) {
			t.Fatalf("SQSpace = %d after %v, want %d", r.SQSpace(), hangTimeout, want)
		}
		runtime.Gosched()
	}
}

// userData makes user_data values that use all 64 bits.
func userData(i int) uint64 { return 0xfeed_0000_0000_0000 | uint64(i)<<8 | 0x5a }

// TestNop re-expresses liburing's test/nop.c: NOPs in batches of several
// sizes, each completing once with Res 0 and its own user_data, under
// every ring configuration.
func TestNop(t *testing.T) {
	const total = 1000
	for _, rc := range ringConfigs {
		t.Run("ring="+rc.name, func(t *testing.T) {
			for _, batch := range []int{1, 7, 64, 256} {
				t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
					r := newRing(t, rc.cfg)
					if uint32(batch) > r.SQEntries() {
						t.Fatalf("batch %d larger than the SQ (%d)", batch, r.SQEntries())
					}
					seen := make(map[uint64]bool, total)
					for sent := 0; sent < total; {
						n := min(batch, total-sent)
						waitSQSpace(t, r, uint32(n))
						for i := range n {
							sqe := r.GetSQE()
							if sqe == nil {
								t.Fatalf("GetSQE = nil with %d of %d SQEs of the batch queued", i, n)
							}
							sqe.PrepNop()
							sqe.UserData = userData(sent + i)
						}
						sent += n
						for _, c := range waitCQEs(t, r, n) {
							if c.Res != 0 || c.Flags != 0 {
								t.Fatalf("NOP %#x: Res %d Flags %#x, want 0 0", c.UserData, c.Res, c.Flags)
							}
							if seen[c.UserData] {
								t.Fatalf("user_data %#x completed twice", c.UserData)
							}
							seen[c.UserData] = true
						}
					}
					for i := range total {
						if !seen[userData(i)] {
							t.Fatalf("NOP %d (user_data %#x) never completed", i, userData(i))
						}
					}
					if n := r.CQReady(); n != 0 {
						t.Errorf("CQReady = %d after every NOP was reaped", n)
					}
					t.Logf("flags=%s features=%v stats=%+v", uring.SetupFlagString(r.SetupFlags()),
						uring.FeatureNames(r.Features()), r.Stats())
				})
			}
		})
	}
}

// TestSQFull re-expresses liburing's test/sq-full.c: GetSQE hands out
// exactly SQEntries SQEs before it returns nil, and after Submit (and, for
// SQPOLL, after the kernel thread has consumed them) there is room again.
func TestSQFull(t *testing.T) {
	for _, rc := range ringConfigs {
		t.Run("ring="+rc.name, func(t *testing.T) {
			for _, entries := range []uint32{1, 8, 64} {
				t.Run(fmt.Sprintf("entries=%d", entries), func(t *testing.T) {
					r := newRing(t, rc.with(entries, 0))
					size := r.SQEntries()
					if size != entries {
						t.Fatalf("SQEntries = %d, want %d", size, entries)
					}
					for round := range 3 {
						for i := range size {
							if got := r.SQSpace(); got != size-i {
								t.Fatalf("round %d: SQSpace = %d with %d queued, want %d", round, got, i, size-i)
							}
							sqe := r.GetSQE()
							if sqe == nil {
								t.Fatalf("round %d: GetSQE = nil with %d of %d slots used", round, i, size)
							}
							sqe.PrepNop()
							sqe.UserData = uint64(i)
						}
						if sqe := r.GetSQE(); sqe != nil {
							t.Fatalf("round %d: GetSQE returned an SQE with all %d slots unsubmitted", round, size)
						}
						if got := r.SQSpace(); got != 0 {
							t.Fatalf("round %d: SQSpace = %d on a full SQ", round, got)
						}
						n, err := r.Submit()
						if err != nil {
							t.Fatalf("round %d: Submit: %v", round, err)
						}
						if !rc.cfg.SQPoll {
							// The kernel consumed the SQEs inside the call.
							if n != int(size) {
								t.Fatalf("round %d: Submit = %d, want %d", round, n, size)
							}
							if got := r.SQSpace(); got != size {
								t.Fatalf("round %d: SQSpace = %d after Submit, want %d", round, got, size)
							}
						}
						waitCQEs(t, r, int(size))
						waitSQSpace(t, r, size)
					}
				})
			}
		})
	}
}

// TestCQOverflow re-expresses liburing's test/cq-overflow.c: many more NOPs
// than the CQ holds are submitted without reaping. With FEAT_NODROP the
// kernel keeps the surplus on its overflow list (CQOverflowPending) and
// posts it as the CQ is drained and the ring entered again; every
// completion arrives exactly once, in submission order.
func TestCQOverflow(t *testing.T) {
	const (
		sqEntries = 16
		cqEntries = 32
		total     = 8 * cqEntries
	)
	for _, rc := range ringConfigs {
		t.Run("ring="+rc.name, func(t *testing.T) {
			r := newRing(t, rc.with(sqEntries, cqEntries))
			if r.Features()&uring.FeatNoDrop == 0 {
				t.Skipf("kernel lacks IORING_FEAT_NODROP (features %v)", uring.FeatureNames(r.Features()))
			}
			if got := r.CQEntries(); got != cqEntries {
				t.Fatalf("CQEntries = %d, want %d", got, cqEntries)
			}

			// Submit everything without consuming a single completion.
			sawOverflow := false
			deadline := time.Now().Add(hangTimeout)
			for sent := 0; sent < total; {
				queued := 0
				for sent < total {
					sqe := r.GetSQE()
					if sqe == nil {
						break
					}
					sqe.PrepNop()
					sqe.UserData = uint64(sent)
					sent++
					queued++
				}
				if queued == 0 { // SQPOLL: wait for the kernel thread
					if time.Now().After(deadline) {
						t.Fatalf("SQ still full after %v with %d NOPs sent", hangTimeout, sent)
					}
					runtime.Gosched()
				}
				if _, err := r.Submit(); err != nil {
					t.Fatalf("Submit after %d NOPs: %v", sent, err)
				}
				sawOverflow = sawOverflow || r.CQOverflowPending()
			}
			waitSQSpace(t, r, r.SQEntries()) // every SQE consumed
			sawOverflow = sawOverflow || r.CQOverflowPending()
			if !sawOverflow {
				t.Fatalf("%d NOPs into a %d-entry CQ, yet CQOverflowPending never reported true", total, cqEntries)
			}
			if got := r.CQReady(); got != cqEntries {
				t.Fatalf("CQReady = %d with the CQ overflowing, want %d", got, cqEntries)
			}

			// Drain: consume what is posted, then enter so that the kernel
			// moves overflowed completions into the freed slots.
			var next uint64
			buf := make([]uring.CQE, 16)
			for next < total {
				k := r.ReapCQEs(buf)
				for _, c := range buf[:k] {
					if c.UserData != next || c.Res != 0 {
						t.Fatalf("completion %d: user_data %d Res %d, want user_data %d Res 0", next, c.UserData, c.Res, next)
					}
					next++
				}
				if k > 0 {
					continue
				}
				if !r.CQOverflowPending() {
					t.Fatalf("CQ empty, no overflow pending, %d of %d completions seen", next, total)
				}
				if _, err := r.Submit(); err != nil {
					t.Fatalf("Submit to flush the overflow: %v", err)
				}
				if r.CQReady() == 0 {
					t.Fatalf("Submit flushed nothing from the overflow list (%d of %d seen)", next, total)
				}
			}
			if r.CQOverflowPending() || r.CQReady() != 0 {
				t.Fatalf("after draining: CQOverflowPending %v, CQReady %d", r.CQOverflowPending(), r.CQReady())
			}
			st := r.Stats()
			if st.LostCompletions != 0 || st.Completions != total {
				t.Fatalf("stats %+v: want LostCompletions 0, Completions %d", st, total)
			}
			t.Logf("stats=%+v", st)
		})
	}
}

// TestSetupErrors checks what New makes of configurations the kernel
// refuses, or adjusts, in io_uring_setup.
func TestSetupErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    uring.Config
		errno  unix.Errno // 0: New must succeed
		tried  int        // flag sets tried before giving up, 0: any
		inMsg  []string   // substrings of the error message
		sq, cq uint32     // sizes of a ring New made
	}{{
		name:  "flags=unknown-bit",
		cfg:   uring.Config{Flags: 1 << 31},
		errno: unix.EINVAL, tried: 1,
		inMsg: []string{"io_uring_setup", "entries=256", "flags=bit31", "invalid argument"},
	}, {
		name:  "flags=defer-taskrun-alone",
		cfg:   uring.Config{Flags: uring.SetupDeferTaskrun},
		errno: unix.EINVAL, tried: 1,
		inMsg: []string{"flags=DEFER_TASKRUN"},
	}, {
		name:  "flags=sqpoll-with-defer-taskrun",
		cfg:   uring.Config{Flags: uring.SetupSQPoll | uring.SetupSingleIssuer | uring.SetupDeferTaskrun},
		errno: unix.EINVAL, tried: 1,
		inMsg: []string{"SQPOLL|SINGLE_ISSUER|DEFER_TASKRUN"},
	}, {
		name:  "entries=1M",
		cfg:   uring.Config{Entries: 1 << 20},
		errno: unix.EINVAL,
		inMsg: []string{"entries=1048576", "stepping down"},
	}, {
		name:  "entries=64,cq=32",
		cfg:   uring.Config{Entries: 64, CQEntries: 32},
		errno: unix.EINVAL,
		inMsg: []string{"entries=64", "CQSIZE"},
	}, {
		name:  "entries=64,cq=1M",
		cfg:   uring.Config{Entries: 64, CQEntries: 1 << 20},
		errno: unix.EINVAL,
		inMsg: []string{"CQSIZE"},
	}, {
		name: "entries=0",
		cfg:  uring.Config{},
		sq:   256, cq: 512,
	}, {
		name: "entries=3",
		cfg:  uring.Config{Entries: 3},
		sq:   4, cq: 8,
	}, {
		name: "entries=8,cq=100",
		cfg:  uring.Config{Entries: 8, CQEntries: 100},
		sq:   8, cq: 128,
	}, {
		name: "entries=1M,flags=clamp",
		cfg:  uring.Config{Entries: 1 << 20, Flags: uring.SetupClamp},
		sq:   32768, cq: 65536,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := uring.New(tc.cfg)
			if tc.errno == 0 {
				if err != nil {
					skipIfUnavailable(t, err)
					t.Fatalf("New(%+v): %v", tc.cfg, err)
				}
				defer r.Close()
				if r.SQEntries() != tc.sq || r.CQEntries() != tc.cq {
					t.Fatalf("SQ %d CQ %d, want %d %d", r.SQEntries(), r.CQEntries(), tc.sq, tc.cq)
				}
				return
			}
			if err == nil {
				r.Close()
				t.Fatalf("New(%+v) succeeded with flags %s, want %v", tc.cfg, uring.SetupFlagString(r.SetupFlags()), tc.errno)
			}
			skipIfUnavailable(t, err)
			if !errors.Is(err, tc.errno) {
				t.Fatalf("New: %v; want errors.Is(err, %v)", err, tc.errno)
			}
			var serr *uring.SetupError
			if !errors.As(err, &serr) {
				t.Fatalf("New: %T %v, want a *SetupError", err, err)
			}
			if serr.Err != tc.errno || len(serr.Tried) == 0 {
				t.Fatalf("SetupError %+v: want Err %v and the flag sets tried", serr, tc.errno)
			}
			if tc.tried != 0 && len(serr.Tried) != tc.tried {
				t.Errorf("tried %d flag sets (%v), want %d", len(serr.Tried), serr.Tried, tc.tried)
			}
			if tc.cfg.Flags != 0 && serr.Tried[0] != tc.cfg.Flags {
				t.Errorf("tried flags %#x, want exactly Config.Flags %#x", serr.Tried[0], tc.cfg.Flags)
			}
			for _, s := range tc.inMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// TestSingleIssuer re-expresses liburing's test/single-issuer.c: a ring
// made with SingleIssuer may be entered only from the thread that made it;
// another thread's submit, wait or register fails with EEXIST and leaves
// the ring usable by its owner. With SQPOLL the kernel thread submits, so
// only io_uring_register is refused. Rings without SingleIssuer (SQPOLL
// included) have no such rule.
func TestSingleIssuer(t *testing.T) {
	var (
		plain, single, sqpoll, sqpollSingle = ringConfigs[0], ringConfigs[1], ringConfigs[2], ringConfigs[3]
	)
	for _, tc := range []struct {
		ring   ringConfig
		op     string
		errno  unix.Errno
		queued bool // the op leaves a NOP queued in the SQ
	}{
		{single, "submit", unix.EEXIST, true},
		{single, "wait", unix.EEXIST, false},
		{single, "register", unix.EEXIST, false},
		{sqpollSingle, "submit", 0, true},
		{sqpollSingle, "wait", 0, false},
		{sqpollSingle, "register", unix.EEXIST, false},
		{plain, "submit", 0, true},
		{plain, "wait", 0, false},
		{plain, "register", 0, false},
		{sqpoll, "submit", 0, true},
		{sqpoll, "register", 0, false},
	} {
		t.Run(fmt.Sprintf("ring=%s,op=%s", tc.ring.name, tc.op), func(t *testing.T) {
			runtime.LockOSThread() // newRing locks for single-issuer; lock for both alike
			defer runtime.UnlockOSThread()
			r := newRing(t, tc.ring.cfg)
			if got := r.SetupFlags()&uring.SetupSingleIssuer != 0; got != tc.ring.cfg.SingleIssuer {
				t.Fatalf("SetupFlags = %s; SINGLE_ISSUER must be set exactly when Config.SingleIssuer is",
					uring.SetupFlagString(r.SetupFlags()))
			}

			// The owner submits.
			sqe := r.GetSQE()
			sqe.PrepNop()
			sqe.UserData = 1
			if c := waitCQEs(t, r, 1)[0]; c.UserData != 1 || c.Res != 0 {
				t.Fatalf("owner's NOP: %+v", c)
			}

			// Another OS thread tries. The channel orders its use of the ring
			// before the owner's next use.
			errc := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				switch tc.op {
				case "submit":
					sqe := r.GetSQE()
					sqe.PrepNop()
					sqe.UserData = 2
					_, err := r.Submit()
					errc <- err
				case "wait":
					_, err := r.SubmitAndWait(0)
					errc <- err
				case "register":
					_, err := r.Probe()
					errc <- err
				}
			}()
			err := <-errc
			if tc.errno == 0 && err != nil {
				t.Fatalf("%s from another thread: %v", tc.op, err)
			}
			if tc.errno != 0 && !errors.Is(err, tc.errno) {
				t.Fatalf("%s from another thread: %v, want errors.Is(err, %v)", tc.op, err, tc.errno)
			}

			// The owner carries on: what the other thread queued is
			// submitted (once), and new work completes.
			sqe = r.GetSQE()
			sqe.PrepNop()
			sqe.UserData = 3
			want := []uint64{3}
			if tc.queued {
				want = []uint64{2, 3}
			}
			var got []uint64
			for _, c := range waitCQEs(t, r, len(want)) {
				if c.Res != 0 {
					t.Fatalf("NOP %d: Res %d", c.UserData, c.Res)
				}
				got = append(got, c.UserData)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("owner reaped user_data %v, want %v", got, want)
			}
			if n := r.CQReady(); n != 0 {
				t.Fatalf("CQReady = %d, a NOP completed twice?", n)
			}
		})
	}
}

// TestProbe re-expresses liburing's test/probe.c: the kernel reports the
// opcodes ringstore relies on, and Opcode.String names them.
func TestProbe(t *testing.T) {
	r := newRing(t, uring.Config{})
	p, err := r.Probe()
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if p.LastOp < uring.OpFtruncate {
		t.Errorf("LastOp = %v, want at least FTRUNCATE (Linux 6.9)", p.LastOp)
	}
	ops := p.Ops()
	for _, op := range []uring.Opcode{
		uring.OpNop, uring.OpRead, uring.OpWrite, uring.OpReadv, uring.OpWritev,
		uring.OpReadFixed, uring.OpWriteFixed, uring.OpFsync, uring.OpTimeout,
	} {
		if !p.Supported(op) || !slices.Contains(ops, op) {
			t.Errorf("%v: Supported %v, in Ops %v; want both", op, p.Supported(op), slices.Contains(ops, op))
		}
	}
	if !slices.IsSorted(ops) || len(ops) == 0 || ops[len(ops)-1] > p.LastOp {
		t.Errorf("Ops() = %v: want sorted, none above LastOp %v", ops, p.LastOp)
	}
	if p.Supported(uring.Opcode(255)) {
		t.Errorf("opcode 255 reported supported")
	}
	t.Logf("LastOp %v, %d ops supported", p.LastOp, len(ops))

	for _, tc := range []struct {
		op   uring.Opcode
		want string
	}{
		{uring.OpNop, "NOP"},
		{uring.OpReadv, "READV"},
		{uring.OpReadFixed, "READ_FIXED"},
		{uring.OpTimeout, "TIMEOUT"},
		{uring.OpRead, "READ"},
		{uring.OpWrite, "WRITE"},
		{uring.OpFtruncate, "FTRUNCATE"},
		{uring.OpListen, "LISTEN"},
		{uring.Opcode(255), "OP_255"},
	} {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("Opcode(%d).String() = %q, want %q", uint8(tc.op), got, tc.want)
		}
	}
}

// TestWaitTimeout re-expresses the waiting parts of liburing's
// test/timeout.c and cq-wait: a wait with nothing in flight times out no
// sooner than asked; a TIMEOUT SQE completes with -ETIME, or with 0 when
// its completion count is reached first; a NOP ends a wait early.
func TestWaitTimeout(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *uring.Ring)
	}{{
		name: "idle",
		run: func(t *testing.T, r *uring.Ring) {
			for _, d := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
				start := time.Now()
				_, err := r.WaitTimeout(1, d)
				elapsed := time.Since(start)
				if !errors.Is(err, uring.ErrTimeout) {
					t.Fatalf("WaitTimeout(1, %v) with nothing in flight: %v, want ErrTimeout", d, err)
				}
				if elapsed < d {
					t.Fatalf("WaitTimeout(1, %v) gave up after %v", d, elapsed)
				}
			}
		},
	}, {
		name: "zero-wanted",
		run: func(t *testing.T, r *uring.Ring) {
			if _, err := r.WaitTimeout(0, time.Millisecond); err != nil {
				t.Fatalf("WaitTimeout(0, 1ms): %v", err)
			}
		},
	}, {
		name: "nop-first",
		run: func(t *testing.T, r *uring.Ring) {
			sqe := r.GetSQE()
			sqe.PrepNop()
			sqe.UserData = 7
			if _, err := r.WaitTimeout(1, hangTimeout); err != nil {
				t.Fatalf("WaitTimeout with a NOP queued: %v", err)
			}
			if n := r.CQReady(); n != 1 {
				t.Fatalf("CQReady = %d after the wait, want 1", n)
			}
			if c := waitCQEs(t, r, 1)[0]; c.UserData != 7 || c.Res != 0 {
				t.Fatalf("NOP: %+v", c)
			}
		},
	}, {
		name: "timeout-sqe-expires",
		run: func(t *testing.T, r *uring.Ring) {
			const d = 5 * time.Millisecond
			ts := &uring.Timespec{Nsec: int64(d)}
			sqe := r.GetSQE()
			sqe.PrepTimeout(ts, 0, 0)
			sqe.UserData = 8
			start := time.Now()
			c := waitCQEs(t, r, 1)[0]
			runtime.KeepAlive(ts) // an SQPOLL thread may read it after Submit returns
			if c.UserData != 8 || !errors.Is(c.Err(), unix.ETIME) {
				t.Fatalf("TIMEOUT: user_data %d Res %d (%v), want 8 -ETIME", c.UserData, c.Res, c.Err())
			}
			if elapsed := time.Since(start); elapsed < d {
				t.Fatalf("%v TIMEOUT completed after %v", d, elapsed)
			}
		},
	}, {
		name: "timeout-sqe-count",
		run: func(t *testing.T, r *uring.Ring) {
			ts := &uring.Timespec{Sec: int64(hangTimeout / time.Second)}
			sqe := r.GetSQE()
			sqe.PrepTimeout(ts, 1, 0)
			sqe.UserData = 9
			if _, err := r.Submit(); err != nil {
				t.Fatalf("Submit: %v", err)
			}
			sqe = r.GetSQE()
			sqe.PrepNop()
			sqe.UserData = 10
			res := map[uint64]int32{}
			for _, c := range waitCQEs(t, r, 2) {
				res[c.UserData] = c.Res
			}
			runtime.KeepAlive(ts)
			if want := map[uint64]int32{9: 0, 10: 0}; !mapsEqual(res, want) {
				t.Fatalf("completions %v, want %v (the TIMEOUT satisfied by the NOP)", res, want)
			}
		},
	}}
	for _, rc := range ringConfigs {
		t.Run("ring="+rc.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run("case="+tc.name, func(t *testing.T) {
					r := newRing(t, rc.cfg) // per subtest: a single-issuer ring stays on its thread
					if r.Features()&uring.FeatExtArg == 0 {
						t.Skip("kernel lacks IORING_FEAT_EXT_ARG")
					}
					tc.run(t, r)
				})
			}
		})
	}
}

func mapsEqual(a, b map[uint64]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestClose checks that Close is idempotent and that every method of a
// closed ring fails cleanly (ErrClosed, nil, zero) instead of touching the
// unmapped rings or a file descriptor that may now be someone else's.
func TestClose(t *testing.T) {
	for _, rc := range ringConfigs {
		t.Run("ring="+rc.name, func(t *testing.T) {
			r := newRing(t, rc.cfg) // its cleanup closes the ring a third time
			sqe := r.GetSQE()
			sqe.PrepNop()
			waitCQEs(t, r, 1)
			// Leave one completion unconsumed and one SQE unsubmitted.
			r.GetSQE().PrepNop()
			if _, err := r.SubmitAndWait(1); err != nil {
				t.Fatalf("SubmitAndWait: %v", err)
			}
			r.GetSQE().PrepNop()
			before := r.Stats()

			for i := range 2 {
				if err := r.Close(); err != nil {
					t.Fatalf("Close #%d: %v", i+1, err)
				}
			}

			mem := anonMem(t, 4096)
			for _, tc := range []struct {
				name string
				call func() error
			}{
				{"Submit", func() error { _, err := r.Submit(); return err }},
				{"SubmitAndWait", func() error { _, err := r.SubmitAndWait(1); return err }},
				{"WaitTimeout", func() error { _, err := r.WaitTimeout(1, time.Millisecond); return err }},
				{"WaitCQE", func() error { _, err := r.WaitCQE(); return err }},
				{"RegisterBuffers", func() error { return r.RegisterBuffers([][]byte{mem}) }},
				{"UnregisterBuffers", r.UnregisterBuffers},
				{"RegisterFiles", func() error { return r.RegisterFiles([]int32{0}) }},
				{"UnregisterFiles", r.UnregisterFiles},
				{"Probe", func() error { _, err := r.Probe(); return err }},
			} {
				if err := tc.call(); !errors.Is(err, uring.ErrClosed) {
					t.Errorf("%s after Close: %v, want ErrClosed", tc.name, err)
				}
			}
			if sqe := r.GetSQE(); sqe != nil {
				t.Errorf("GetSQE after Close returned an SQE")
			}
			if _, ok := r.PeekCQE(); ok {
				t.Errorf("PeekCQE after Close returned a CQE")
			}
			if n := r.CQReady(); n != 0 {
				t.Errorf("CQReady after Close = %d", n)
			}
			if n := r.SQSpace(); n != 0 {
				t.Errorf("SQSpace after Close = %d", n)
			}
			if n := r.ReapCQEs(make([]uring.CQE, 4)); n != 0 {
				t.Errorf("ReapCQEs after Close = %d", n)
			}
			r.CQAdvance(1)
			if got := r.Stats(); got.Completions != before.Completions || got.SQEs != before.SQEs {
				t.Errorf("Stats after Close %+v, want the counters of before Close %+v", got, before)
			}
		})
	}
}

// TestStats checks that the counters follow the calls: SQEs when Submit
// publishes, Enters per io_uring_enter, Completions when consumed.
func TestStats(t *testing.T) {
	for _, tc := range []struct {
		ring ringConfig
		// enters: io_uring_enter calls a Submit of a batch makes, and
		// idleEnters those of a Submit with nothing queued; -1 when the
		// SQPOLL thread decides.
		enters, idleEnters int
	}{
		{ringConfigs[0], 1, 0},
		{ringConfigs[1], 1, 1}, // DEFER_TASKRUN: enter to run task work
		{ringConfigs[2], -1, -1},
		{ringConfigs[3], -1, -1},
	} {
		t.Run("ring="+tc.ring.name, func(t *testing.T) {
			const batch = 8
			r := newRing(t, tc.ring.cfg)
			if st := r.Stats(); st != (uring.Stats{}) {
				t.Fatalf("new ring: Stats %+v, want zero", st)
			}
			enters := func() int {
				st := r.Stats()
				return int(st.Enters - st.EINTRRetries)
			}
			for i := range batch {
				sqe := r.GetSQE()
				sqe.PrepNop()
				sqe.UserData = uint64(i)
			}
			if st := r.Stats(); st.SQEs != 0 || st.Enters != 0 {
				t.Fatalf("before Submit: Stats %+v, want no SQEs or enters", st)
			}
			if _, err := r.Submit(); err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if st := r.Stats(); st.SQEs != batch {
				t.Fatalf("after Submit: SQEs %d, want %d", st.SQEs, batch)
			}
			if tc.enters >= 0 && enters() != tc.enters {
				t.Fatalf("after Submit: %d enters, want %d", enters(), tc.enters)
			}
			cqes := waitCQEs(t, r, batch)
			if st := r.Stats(); st.Completions != batch || st.SQEs != batch {
				t.Fatalf("after reaping %d: Stats %+v", len(cqes), st)
			}
			e := enters()
			if _, err := r.Submit(); err != nil {
				t.Fatalf("idle Submit: %v", err)
			}
			if tc.idleEnters >= 0 && enters()-e != tc.idleEnters {
				t.Fatalf("idle Submit made %d enters, want %d", enters()-e, tc.idleEnters)
			}
			// PeekCQE does not consume; CQAdvance does.
			sqe := r.GetSQE()
			sqe.PrepNop()
			c, err := r.WaitCQE()
			if err != nil {
				t.Fatalf("WaitCQE: %v", err)
			}
			if c2, ok := r.PeekCQE(); !ok || c2 != c {
				t.Fatalf("PeekCQE after WaitCQE: %p %v, want %p", c2, ok, c)
			}
			if st := r.Stats(); st.Completions != batch {
				t.Fatalf("WaitCQE consumed: Completions %d", st.Completions)
			}
			r.CQAdvance(1)
			st := r.Stats()
			if st.Completions != batch+1 || st.SQEs != batch+1 || st.Busy != 0 || st.LostCompletions != 0 ||
				st.CQOverflow != 0 || st.SQDropped != 0 {
				t.Fatalf("final Stats %+v", st)
			}
		})
	}
}
