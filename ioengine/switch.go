package ioengine

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// EnvVar is the environment variable that switches io_uring on and off for
// the whole process.
const EnvVar = "RINGSTORE_IO_URING"

// Switch is the process-wide io_uring switch as read from EnvVar.
type Switch struct {
	Set     bool   // the variable was present
	Value   string // its raw bytes (may be any bytes, not only UTF-8)
	Enabled bool   // io_uring may be attempted: unset, or exactly "true"
}

func (s Switch) String() string {
	switch {
	case !s.Set:
		return EnvVar + " unset: io_uring enabled"
	case s.Enabled:
		return EnvVar + "=true: io_uring enabled"
	default:
		return fmt.Sprintf("%s=%q: io_uring disabled (only the exact value \"true\" enables it)", EnvVar, s.Value)
	}
}

var envSwitch = sync.OnceValue(func() Switch { return parseSwitch(os.LookupEnv(EnvVar)) })

// parseSwitch applies the rule of DESIGN.md: unset or exactly "true"
// enables; any other value, including "", "TRUE", "1" and bytes that are not
// UTF-8, disables.
func parseSwitch(value string, set bool) Switch {
	return Switch{Set: set, Value: value, Enabled: !set || value == "true"}
}

// EnvSwitch returns the switch, read from the environment the first time any
// engine or caller asks and cached for the life of the process: a later
// change of the environment changes nothing.
func EnvSwitch() Switch { return envSwitch() }

// IOMode is the backend an engine asks for. The zero value, Auto, follows
// the environment switch.
type IOMode int

const (
	// Auto uses io_uring unless RINGSTORE_IO_URING disables it.
	Auto IOMode = iota
	// URing asks for io_uring whatever the environment says.
	URing
	// SQPoll asks for io_uring with a kernel submission thread.
	SQPoll
	// Syscall uses pread/pwrite/fdatasync, one call per request.
	Syscall
)

var modeNames = [...]string{"auto", "uring", "sqpoll", "syscall"}

func (m IOMode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("IOMode(%d)", int(m))
}

// ParseIOMode parses "auto", "uring", "sqpoll" or "syscall".
func ParseIOMode(s string) (IOMode, error) {
	for i, n := range modeNames {
		if s == n {
			return IOMode(i), nil
		}
	}
	return 0, fmt.Errorf("ioengine: unknown I/O mode %q (want one of %s)", s, strings.Join(modeNames[:], ", "))
}

// Backend is what an engine actually runs on.
type Backend int

const (
	BackendSyscall Backend = iota // pread/pwrite
	BackendURing                  // io_uring, submissions by the ring goroutine
	BackendSQPoll                 // io_uring with a kernel submission thread
)

func (b Backend) String() string {
	switch b {
	case BackendSyscall:
		return "syscall"
	case BackendURing:
		return "uring"
	case BackendSQPoll:
		return "sqpoll"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}
