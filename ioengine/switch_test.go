//go:build linux && !ringstore_nouring

// This file is limited to the io_uring build because it calls
// explainSetup, which only that build has. parseSwitch is fuzzed in every
// build (switch_fuzz_test.go).

package ioengine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/uring"
)

// TestParseSwitch pins the rule of DESIGN.md: unset, or exactly "true",
// enables io_uring; any other value disables it.
func TestParseSwitch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   string
		set     bool
		enabled bool
	}{
		{"unset", "", false, true},
		{"true", "true", true, true},
		{"false", "false", true, false},
		{"empty", "", true, false},
		{"TRUE", "TRUE", true, false},
		{"True", "True", true, false},
		{"1", "1", true, false},
		{"leading_space", " true", true, false},
		{"trailing_newline", "true\n", true, false},
		{"trailing_nul", "true\x00", true, false},
		{"yes", "yes", true, false},
		{"non_UTF-8", "\xff\xfe", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := parseSwitch(tc.value, tc.set)
			if sw.Enabled != tc.enabled || sw.Set != tc.set || sw.Value != tc.value {
				t.Errorf("parseSwitch(%q, %v) = %+v; want Set %v, Value %q, Enabled %v", tc.value, tc.set, sw, tc.set, tc.value, tc.enabled)
			}
			s := sw.String()
			if !strings.Contains(s, EnvVar) {
				t.Errorf("String() = %q does not name %s", s, EnvVar)
			}
			switch {
			case !tc.set:
				if !strings.Contains(s, "unset") || !strings.Contains(s, "enabled") {
					t.Errorf("String() = %q; want it to say unset and enabled", s)
				}
			case tc.enabled:
				if !strings.Contains(s, "=true") || !strings.Contains(s, "enabled") {
					t.Errorf("String() = %q; want =true and enabled", s)
				}
			default:
				// The value shows quoted, so that any bytes read plainly.
				if q := fmt.Sprintf("%q", tc.value); !strings.Contains(s, q) || !strings.Contains(s, "disabled") {
					t.Errorf("String() = %q; want it to show the value %s and say disabled", s, q)
				}
			}
		})
	}
}

// TestEnvSwitchCached: the switch is read once; a later change of the
// environment changes nothing in this process.
func TestEnvSwitchCached(t *testing.T) {
	first := EnvSwitch()
	flipped := "true"
	if first.Enabled {
		flipped = "false"
	}
	t.Setenv(EnvVar, flipped)
	if again := EnvSwitch(); again != first {
		t.Errorf("EnvSwitch() = %+v after setting %s=%s, want the cached %+v", again, EnvVar, flipped, first)
	}
}

func TestParseIOMode(t *testing.T) {
	for _, m := range []IOMode{Auto, URing, SQPoll, Syscall} {
		got, err := ParseIOMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseIOMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	for _, s := range []string{"", "URING", "Auto", " uring", "uring\n", "io_uring", "IOMode(7)", "\xff"} {
		_, err := ParseIOMode(s)
		if err == nil {
			t.Errorf("ParseIOMode(%q) succeeded", s)
			continue
		}
		if q := fmt.Sprintf("%q", s); !strings.Contains(err.Error(), q) || !strings.Contains(err.Error(), "auto, uring, sqpoll, syscall") {
			t.Errorf("ParseIOMode(%q) error %q; want it to show %s and the valid modes", s, err, q)
		}
	}
	if s := IOMode(7).String(); s != "IOMode(7)" {
		t.Errorf("IOMode(7).String() = %q", s)
	}
}

func TestNewInvalidMode(t *testing.T) {
	for _, m := range []IOMode{-1, Syscall + 1, 100} {
		e, err := New(Options{Mode: m})
		if err == nil || e != nil {
			t.Errorf("New(Mode %d) = %v, %v; want an error", int(m), e, err)
			if e != nil {
				e.Close()
			}
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprint(int(m))) {
			t.Errorf("New(Mode %d): error %q does not name the mode", int(m), err)
		}
	}
}

// TestNoFallback: an engine that was asked for the syscall backend did not
// fall back from anything; one on Auto follows the switch.
func TestNoFallback(t *testing.T) {
	before := Fallbacks()
	e := newEngine(t, Syscall, Options{})
	if e.Backend() != BackendSyscall || e.FellBack() || e.FallbackReason() != "" || e.Stats().Fallbacks != 0 {
		t.Errorf("New(Mode: syscall): backend %s, FellBack %v, reason %q, Stats.Fallbacks %d; want syscall, false, empty, 0",
			e.Backend(), e.FellBack(), e.FallbackReason(), e.Stats().Fallbacks)
	}
	if Fallbacks() != before {
		t.Errorf("Fallbacks() went from %d to %d", before, Fallbacks())
	}

	a, err := New(Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, a, hangLimit)
	sw := EnvSwitch()
	switch {
	case !sw.Enabled:
		if a.Backend() != BackendSyscall || a.FellBack() || a.FallbackReason() != sw.String() {
			t.Errorf("Auto with %s: backend %s, FellBack %v, reason %q; want syscall, false, %q", sw, a.Backend(), a.FellBack(), a.FallbackReason(), sw.String())
		}
	case a.FellBack():
		if !refusedHere(a.FallbackReason()) || a.Stats().Fallbacks != 1 {
			t.Errorf("Auto fell back: %q, Stats.Fallbacks %d", a.FallbackReason(), a.Stats().Fallbacks)
		}
	default:
		if a.Backend() != BackendURing || a.FallbackReason() != "" {
			t.Errorf("Auto with %s: backend %s, reason %q; want uring, no reason", sw, a.Backend(), a.FallbackReason())
		}
	}
}

// TestExplainSetup: each refusal of the ring gets its usual cause, and the
// errno stays reachable with errors.Is.
func TestExplainSetup(t *testing.T) {
	for _, tc := range []struct {
		errno unix.Errno
		hints []string
	}{
		{unix.EPERM, []string{"forbidden", "seccomp", "Docker", "kernel.io_uring_disabled"}},
		{unix.ENOSYS, []string{"no io_uring", "gVisor"}},
		{unix.ENOMEM, []string{"locked memory", "RLIMIT_MEMLOCK"}},
		{unix.EINVAL, []string{"none of the setup flag sets"}},
		{unix.EFAULT, nil},
	} {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			setupErr := &uring.SetupError{Entries: 256, Tried: []uint32{uring.SetupCQSize, 0}, Err: tc.errno}
			for _, in := range []error{setupErr, tc.errno, fmt.Errorf("wrapped: %w", setupErr)} {
				err := explainSetup(in)
				msg := err.Error()
				if !errors.Is(err, tc.errno) {
					t.Errorf("explainSetup(%v) = %v: errors.Is(err, %v) is false", in, err, tc.errno)
				}
				if !strings.HasPrefix(msg, "io_uring setup refused: ") || !strings.Contains(msg, in.Error()) {
					t.Errorf("explainSetup(%v) = %q; want the prefix and the cause", in, msg)
				}
				for _, h := range tc.hints {
					if !strings.Contains(msg, h) {
						t.Errorf("explainSetup(%v) = %q; want it to mention %q", in, msg, h)
					}
				}
				if tc.hints == nil && msg != "io_uring setup refused: "+in.Error() {
					t.Errorf("explainSetup(%v) = %q; want no hint for %v", in, msg, tc.errno)
				}
			}
		})
	}
	// A *SetupError keeps its own fields through the explanation.
	var se *uring.SetupError
	if err := explainSetup(&uring.SetupError{Entries: 8, Tried: []uint32{0}, Err: unix.EPERM}); !errors.As(err, &se) || se.Entries != 8 {
		t.Errorf("errors.As(explainSetup(*SetupError)) = %v, %+v", err, se)
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{OpRead.String(), "read"},
		{OpWrite.String(), "write"},
		{OpFsync.String(), "fsync"},
		{OpFdatasync.String(), "fdatasync"},
		{Op(9).String(), "Op(9)"},
		{BackendSyscall.String(), "syscall"},
		{BackendURing.String(), "uring"},
		{BackendSQPoll.String(), "sqpoll"},
		{Backend(5).String(), "Backend(5)"},
		{FaultShort.String(), "short"},
		{FaultEAGAIN.String(), "EAGAIN"},
		{FaultEIO.String(), "EIO"},
		{FaultENOSPC.String(), "ENOSPC"},
		{FaultTorn.String(), "torn"},
		{FaultKind(0).String(), "FaultKind(0)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
	o := Options{Mode: SQPoll, Entries: 64}
	if s := o.String(); !strings.Contains(s, "sqpoll") || !strings.Contains(s, "64") || !strings.Contains(s, "Faults: false") {
		t.Errorf("Options.String() = %q", s)
	}
}
