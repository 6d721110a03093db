package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// probeReport is what `ringstore probe --json` prints.
type probeReport struct {
	Kernel      string   `json:"kernel"`
	Compiled    bool     `json:"io_uring_compiled"`
	Available   bool     `json:"io_uring_available"`
	SetupError  string   `json:"io_uring_error,omitempty"`
	SetupFlags  string   `json:"setup_flags,omitempty"`
	Features    []string `json:"features,omitempty"`
	Ops         []string `json:"ops,omitempty"`
	MissingOps  []string `json:"missing_ops,omitempty"`
	SQPoll      string   `json:"sqpoll"`
	SelfTest    string   `json:"self_test"`
	Switch      string   `json:"switch"`
	Backend     string   `json:"backend"`
	Reason      string   `json:"backend_reason,omitempty"`
	Dir         string   `json:"dir"`
	FileSystem  string   `json:"file_system,omitempty"`
	Direct      bool     `json:"o_direct"`
	DirectError string   `json:"o_direct_error,omitempty"`
	// DirectUnknown: the check could not create its test file in Dir
	// (permissions, a read-only file system), so whether the file system
	// takes O_DIRECT is not known; Direct is false.
	DirectUnknown bool   `json:"o_direct_unknown,omitempty"`
	MemAlign      uint32 `json:"o_direct_memory_alignment,omitempty"`
	OffsetAlign   uint32 `json:"o_direct_offset_alignment,omitempty"`
	AlignmentSrc  string `json:"o_direct_alignment_source,omitempty"`
}

func cmdProbe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("probe", stderr)
	dir := fs.String("dir", os.TempDir(), "directory whose file system to check for O_DIRECT")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if st, err := os.Stat(*dir); err != nil {
		return usagef("probe: --dir %s: %v", *dir, err)
	} else if !st.IsDir() {
		return usagef("probe: --dir %s is not a directory", *dir)
	}

	m := bench.DescribeMachine(*dir)
	kp := ioengine.ProbeKernel()
	r := probeReport{Kernel: m.Kernel + " " + m.Arch, Compiled: kp.Compiled, Available: kp.Available,
		SetupFlags: kp.SetupFlags, Features: kp.Features, Ops: kp.Ops, MissingOps: kp.MissingOps,
		Switch: ioengine.EnvSwitch().String(), Dir: *dir, FileSystem: m.FileSystem}
	switch {
	case !kp.Compiled:
		r.SetupError = kp.NotCompiled
	case kp.SetupError != nil:
		r.SetupError = kp.SetupError.Error()
	}
	r.SQPoll, r.SelfTest = "ok", "ok"
	if !kp.Available {
		r.SQPoll, r.SelfTest = "not tried", "not run"
	}
	if kp.SQPollError != nil {
		r.SQPoll = kp.SQPollError.Error()
	}
	if kp.SelfTestError != nil {
		r.SelfTest = kp.SelfTestError.Error()
	}
	e, err := ioengine.New(ioengine.Options{Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	r.Backend, r.Reason = e.Backend().String(), e.FallbackReason()
	e.Close()
	if a, err := directio.Check(*dir); err != nil {
		r.DirectError = err.Error()
		r.DirectUnknown = errors.Is(err, iofs.ErrPermission) || errors.Is(err, syscall.EROFS)
	} else {
		r.Direct, r.MemAlign, r.OffsetAlign, r.AlignmentSrc = true, a.Memory, a.Offset, a.Source
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	w := func(k, format string, args ...any) {
		fmt.Fprintf(stdout, "%-16s %s\n", k, fmt.Sprintf(format, args...))
	}
	w("kernel", "%s", r.Kernel)
	switch {
	case r.Available:
		w("io_uring", "available (setup flags %s)", r.SetupFlags)
		w("features", "%s", strings.Join(r.Features, " "))
		w("opcodes", "%d supported", len(r.Ops))
		if len(r.MissingOps) > 0 {
			w("missing opcodes", "%s (ringstore uses them)", strings.Join(r.MissingOps, " "))
		}
		w("self-test", "%s", r.SelfTest)
		w("sqpoll", "%s", r.SQPoll)
	default:
		w("io_uring", "unavailable: %s", r.SetupError)
	}
	w("switch", "%s", r.Switch)
	if r.Reason != "" {
		w("backend", "%s (%s)", r.Backend, r.Reason)
	} else {
		w("backend", "%s", r.Backend)
	}
	switch {
	case r.Direct:
		w("O_DIRECT", "%s on %s: supported, alignment memory %d B, offset %d B (%s)", r.Dir, r.FileSystem, r.MemAlign, r.OffsetAlign, r.AlignmentSrc)
	case r.DirectUnknown:
		w("O_DIRECT", "%s on %s: not known: the check cannot write its test file here (%s); probe a directory you can write on the same file system", r.Dir, r.FileSystem, r.DirectError)
	default:
		w("O_DIRECT", "%s on %s: not supported: %s", r.Dir, r.FileSystem, r.DirectError)
	}
	return nil
}
