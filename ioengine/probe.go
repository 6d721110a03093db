package ioengine

// KernelProbe is what the kernel offers, as `ringstore probe` reports it.
type KernelProbe struct {
	Compiled      bool     // io_uring support is compiled into this binary
	NotCompiled   string   // why not, when Compiled is false
	Available     bool     // a ring could be set up
	SetupError    error    // why not, when Available is false (explained)
	SetupFlags    string   // the flags the best ring setup accepted
	Features      []string // IORING_FEAT_* names
	Ops           []string // supported opcodes
	MissingOps    []string // opcodes ringstore uses that the kernel lacks
	SQPollError   error    // nil when an SQPOLL ring can be set up
	SelfTestError error    // nil when the start-up self-test passes
}

// Usable reports whether the engines can run on io_uring in this process
// (compiled in, a ring set up, the self-test passed) and, when not, why.
func (p KernelProbe) Usable() (ok bool, why string) {
	switch {
	case !p.Compiled:
		return false, p.NotCompiled
	case p.SetupError != nil:
		return false, p.SetupError.Error()
	case !p.Available:
		return false, "no ring could be set up"
	case p.SelfTestError != nil:
		return false, "self-test failed: " + p.SelfTestError.Error()
	}
	return true, ""
}

// requiredOps are the opcodes ringstore issues.
var requiredOps = []string{"NOP", "READ", "WRITE", "FSYNC", "READV", "WRITEV", "READ_FIXED", "WRITE_FIXED", "TIMEOUT"}
