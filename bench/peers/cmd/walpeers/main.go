// Command walpeers runs one trial of one peer log for `ringstore bench wal`,
// with the same workload loop as ringstore's own modes (walbench.Measure):
//
//	walpeers __bench-child wal-peer '<walbench.ChildConfig JSON>'
//	    prints "RESULT <bench.Trial JSON>"
//	walpeers versions
//	    prints the peer modules' versions as a JSON object
//
// The peers are hashicorp/raft-wal, tidwall/wal and etcd's wal. Each is
// used the way its users use it: one entry per call, every call durable
// before it returns, no grouping done for it. All three need consecutive
// indexes from one writer, so a call takes the next index and writes under
// one mutex; concurrent writers queue on it.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/bench/walbench"
)

func main() {
	bench.RegisterChild(walbench.PeerWorkload, runTrial)
	bench.MaybeChild()
	if len(os.Args) == 2 && os.Args[1] == "versions" {
		out, _ := json.Marshal(bench.ModuleVersions(peerModules()))
		fmt.Println(string(out))
		return
	}
	fmt.Fprintf(os.Stderr, "usage: walpeers %s %s '<config JSON>' | walpeers versions\n(run by `ringstore bench wal`)\n", "__bench-child", walbench.PeerWorkload)
	os.Exit(2)
}

// runTrial opens the peer named by the config in a fresh directory and
// measures it.
func runTrial(raw json.RawMessage) (bench.Trial, error) {
	var c walbench.ChildConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return bench.Trial{}, err
	}
	dir, remove, err := walbench.TrialDir(c.Dir)
	if err != nil {
		return bench.Trial{}, err
	}
	defer remove()
	open, ok := peers[c.Mode]
	if !ok {
		return bench.Trial{}, fmt.Errorf("unknown peer %q", c.Mode)
	}
	p, err := open(dir)
	if err != nil {
		return bench.Trial{}, fmt.Errorf("%s: open: %w", c.Mode, err)
	}
	s := &serial{p: p, next: 1}
	tr, err := walbench.Measure(c, func(_ int, payload []byte) error { return s.append(payload) }, walbench.PerCall(&s.calls))
	if cerr := p.close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: close: %w", c.Mode, cerr)
	}
	return walbench.MarkInferred(tr), err
}

// peerModules are the module paths of walbench.Peers.
func peerModules() []string {
	var m []string
	for _, p := range walbench.Peers {
		m = append(m, p.Module)
	}
	return m
}
