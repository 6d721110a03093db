// Command walpeers runs one trial of one peer log for `ringstore bench wal`,
// with the same workload loop as ringstore's own modes (walbench.Measure):
//
//	walpeers __bench-child wal-peer '<walbench.ChildConfig JSON>'
//	    prints "RESULT <bench.Trial JSON>"
//	walpeers versions
//	    prints the peer modules' versions as a JSON object
//
// The peers are hashicorp/raft-wal, tidwall/wal and etcd's wal, each used
// the two ways its users use it, every call durable before it returns:
//
//   - one entry per call (ChildConfig.Batch 0): all three need consecutive
//     indexes from one writer, so a call takes the next index and writes
//     under one mutex; concurrent writers queue on it;
//   - in its batch API (ChildConfig.Batch > 0), fed as a batching raft
//     leader feeds its log: writers queue their entries and wait, one
//     leader goroutine writes everything queued (at most Batch entries)
//     with one call (raft-wal StoreLogs, etcd wal Save with a HardState,
//     tidwall/wal WriteBatch) and acknowledges them all.
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
	if c.Batch < 0 {
		return bench.Trial{}, fmt.Errorf("%s: batch cap %d: want 0 (one entry per call) or more", c.Mode, c.Batch)
	}
	p, err := open(dir, c.Batch > 0)
	if err != nil {
		return bench.Trial{}, fmt.Errorf("%s: open: %w", c.Mode, err)
	}
	var tr bench.Trial
	if c.Batch > 0 {
		tr, err = measureBatched(c, p)
	} else {
		s := &serial{p: p, next: 1}
		tr, err = walbench.Measure(c, func(_ int, payload []byte) error { return s.append(payload) }, walbench.PerCall(&s.calls))
	}
	if cerr := p.close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: close: %w", c.Mode, cerr)
	}
	return walbench.MarkInferred(tr), err
}

// measureBatched measures p fed by a batchLeader with c.Batch entries a
// call at most. Its flushes are its calls (one sync each, by the peer's
// code), so entries per flush is the mean batch.
func measureBatched(c walbench.ChildConfig, p peerLog) (bench.Trial, error) {
	l, err := newBatchLeader(p, c.Batch)
	if err != nil {
		return bench.Trial{}, err
	}
	defer l.stop()
	ws := make([]*pending, max(c.Writers, 0))
	for i := range ws {
		ws[i] = newPending()
	}
	return walbench.Measure(c, func(w int, payload []byte) error { return l.append(ws[w], payload) }, func() walbench.Counts {
		return walbench.Counts{Entries: l.entries.Load(), Flushes: l.calls.Load()}
	})
}

// peerModules are the module paths of walbench.Peers.
func peerModules() []string {
	var m []string
	for _, p := range walbench.Peers {
		m = append(m, p.Module)
	}
	return m
}
