//go:build linux && !ringstore_nouring

package ioengine

import (
	"runtime"
	"slices"

	"github.com/ringstore/ringstore/uring"
)

// ProbeKernel sets up throw-away rings to see what the kernel offers.
func ProbeKernel() KernelProbe {
	p := KernelProbe{Compiled: true}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := uring.New(uring.Config{Entries: 8, SingleIssuer: true})
	if err != nil {
		p.SetupError = explainSetup(err)
		return p
	}
	p.Available = true
	p.SetupFlags = uring.SetupFlagString(r.SetupFlags())
	p.Features = uring.FeatureNames(r.Features())
	if pr, err := r.Probe(); err == nil {
		for _, op := range pr.Ops() {
			p.Ops = append(p.Ops, op.String())
		}
		for _, name := range requiredOps {
			if !slices.Contains(p.Ops, name) {
				p.MissingOps = append(p.MissingOps, name)
			}
		}
	}
	if err := selfTest(r); err != nil {
		p.SelfTestError = err
	}
	r.Close()
	sq, err := uring.New(uring.Config{Entries: 8, SQPoll: true})
	if err != nil {
		p.SQPollError = explainSetup(err)
	} else {
		sq.Close()
	}
	return p
}
