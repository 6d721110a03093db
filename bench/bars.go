package bench

import (
	"fmt"
	"io"
)

// Bar is one of an issue's targets, checked against a run's figures.
type Bar struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	AtMost bool    `json:"at_most"` // Value must be ≤ Limit (else ≥)
	Met    bool    `json:"met"`
	// Valid is false when the run could not test the bar as stated (a mode
	// missing, no memory limit, cold not achieved); Why then says why.
	Valid bool   `json:"valid"`
	Why   string `json:"why,omitempty"`
}

// NewBar checks value against limit (at most, or at least): the bar is met
// only if it is valid too.
func NewBar(name string, value, limit float64, atMost, valid bool, why string) Bar {
	met := value >= limit
	if atMost {
		met = value <= limit
	}
	return Bar{Name: name, Value: value, Limit: limit, AtMost: atMost, Met: valid && met, Valid: valid, Why: why}
}

// MemoryLimit says whether a benchmark's children ran under a memory
// limit.
type MemoryLimit struct {
	Applied    bool   `json:"applied"`
	Cgroup     string `json:"cgroup,omitempty"` // "v1" or "v2"
	Parent     string `json:"parent,omitempty"` // where the children's cgroups were made
	LimitBytes int64  `json:"limit_bytes,omitempty"`
	Reason     string `json:"reason,omitempty"` // why none was applied
	NotV2      string `json:"not_v2,omitempty"` // why v1 was used rather than v2
}

// SetUpMemoryLimit prepares the memory limit of a benchmark's children:
// unless off (offReason then says so), it finds the memory cgroups with
// detect, makes and removes one cgroup of limit bytes to prove it can, and
// removes cgroups an earlier run left behind (saying so on progress). It
// returns the cgroups to run the children in, or nil and the reason in
// MemoryLimit.Reason.
func SetUpMemoryLimit(detect func() (*MemCgroups, error), limit int64, off bool, offReason string, progress io.Writer) (MemoryLimit, *MemCgroups) {
	if off {
		return MemoryLimit{Reason: offReason}, nil
	}
	cg, err := detect()
	if err == nil {
		var c *MemCgroup
		if c, err = cg.New(limit); err == nil {
			err = c.Remove()
		}
	}
	if err != nil {
		return MemoryLimit{Reason: err.Error()}, nil
	}
	if stale, err := cg.RemoveStale(); len(stale) > 0 || err != nil {
		fmt.Fprintf(progress, "removed cgroups an earlier run left behind: %v %v\n", stale, err)
	}
	return MemoryLimit{Applied: true, Cgroup: fmt.Sprintf("v%d", cg.Version), Parent: cg.Parent, LimitBytes: limit, NotV2: cg.NotV2}, cg
}

// WriteBars writes one line per bar: its name, value, limit and whether it
// was met, not met, or not tested (and why).
func WriteBars(w io.Writer, bars []Bar) {
	for _, b := range bars {
		state, cmp := "NOT met", "≥"
		switch {
		case !b.Valid:
			state = "not tested"
		case b.Met:
			state = "met"
		}
		if b.AtMost {
			cmp = "≤"
		}
		why := ""
		if b.Why != "" {
			why = " (" + b.Why + ")"
		}
		fmt.Fprintf(w, "  %-80s %6.2f  (bar %s %.2f): %s%s\n", b.Name, b.Value, cmp, b.Limit, state, why)
	}
}
