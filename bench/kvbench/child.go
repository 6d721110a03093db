package kvbench

import (
	"encoding/json"
	"fmt"

	"github.com/ringstore/ringstore/bench"
)

// Workload is the child workload name of ringstore's own modes and of the
// device measurement.
const Workload = "kv"

// PeerWorkload is the child workload name the peers' program registers
// (bench/peers/cmd/kvpeers).
const PeerWorkload = "kv-peer"

func init() { bench.RegisterChild(Workload, child) }

// child runs one ringstore or device trial in this process.
func child(raw json.RawMessage) (bench.Trial, error) {
	c, err := ParseConfig(raw)
	if err != nil {
		return bench.Trial{}, err
	}
	if err := StartChild(c); err != nil {
		return bench.Trial{}, err
	}
	switch {
	case c.System == SystemDevice && c.Mode == ModeDevice:
		return deviceRead(c)
	case c.System == SystemRingstore && c.Mode == ModeLoad:
		return ringstoreLoad(c)
	case c.System == SystemRingstore:
		return ringstoreRead(c)
	}
	return bench.Trial{}, fmt.Errorf("unknown system %q, mode %q", c.System, c.Mode)
}
