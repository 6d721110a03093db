package raftstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// This file runs a three-node raft cluster on 127.0.0.1 whose nodes keep
// their logs and stable state in Stores: election, replication, a follower
// restarted from its directory, compaction after snapshots, and a follower
// that comes back after the leader compacted past it and catches up
// through InstallSnapshot.

// waitLimit bounds every wait of the cluster test; the waits poll.
const waitLimit = 30 * time.Second

// kvFSM is a map of key=value commands.
type kvFSM struct {
	mu       sync.Mutex
	kv       map[string]string
	restores int
}

func newKVFSM() *kvFSM { return &kvFSM{kv: map[string]string{}} }

func (f *kvFSM) Apply(l *raft.Log) any {
	k, v, ok := strings.Cut(string(l.Data), "=")
	if !ok {
		return fmt.Errorf("bad command %q", l.Data)
	}
	f.mu.Lock()
	f.kv[k] = v
	f.mu.Unlock()
	return nil
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.kv)
	return kvSnapshot(b), err
}

func (f *kvFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	m := map[string]string{}
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return err
	}
	f.mu.Lock()
	f.kv = m
	f.restores++
	f.mu.Unlock()
	return nil
}

func (f *kvFSM) snapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.kv)
}

type kvSnapshot []byte

func (s kvSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (kvSnapshot) Release() {}

// lockedBuffer collects the nodes' raft logs, shown when a test fails.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

type node struct {
	id    raft.ServerID
	addr  raft.ServerAddress // fixed for the node's life, across restarts
	dir   string             // the Store's directory
	snaps string             // the snapshot store's directory

	store *Store
	trans *raft.NetworkTransport
	fsm   *kvFSM
	raft  *raft.Raft
}

type cluster struct {
	t     *testing.T
	nodes []*node
	logw  *lockedBuffer
}

func (c *cluster) config(id raft.ServerID) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.HeartbeatTimeout = 200 * time.Millisecond
	conf.ElectionTimeout = 200 * time.Millisecond
	conf.LeaderLeaseTimeout = 100 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	// Snapshots are taken by the test (raft.Snapshot), not by timers.
	conf.SnapshotInterval = time.Hour
	conf.SnapshotThreshold = 1 << 40
	conf.TrailingLogs = 20
	conf.LogOutput = c.logw
	conf.LogLevel = "INFO"
	return conf
}

func newCluster(t *testing.T, n int) *cluster {
	c := &cluster{t: t, logw: &lockedBuffer{}}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stop(nd)
		}
		if t.Failed() {
			t.Logf("raft logs:\n%s", c.logw.String())
		}
	})
	root := newDir(t)
	var servers []raft.Server
	for i := range n {
		nd := &node{id: raft.ServerID(fmt.Sprintf("n%d", i))}
		nd.dir = filepath.Join(root, string(nd.id), "log")
		nd.snaps = filepath.Join(root, string(nd.id), "snaps")
		c.nodes = append(c.nodes, nd)
		c.openStores(nd, "127.0.0.1:0")
		nd.addr = nd.trans.LocalAddr()
		servers = append(servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	for _, nd := range c.nodes {
		snaps, err := raft.NewFileSnapshotStore(nd.snaps, 2, c.logw)
		if err != nil {
			t.Fatal(err)
		}
		if err := raft.BootstrapCluster(c.config(nd.id), nd.store, nd.store, snaps, nd.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatalf("bootstrap %s: %v", nd.id, err)
		}
		c.startRaft(nd)
	}
	return c
}

// openStores opens nd's Store and its transport on bind.
func (c *cluster) openStores(nd *node, bind string) {
	c.t.Helper()
	s, err := Open(nd.dir, testWALOptions())
	if err != nil {
		c.t.Fatalf("%s: %v", nd.id, err)
	}
	nd.store = s
	trans, err := raft.NewTCPTransport(bind, nil, 3, 2*time.Second, c.logw)
	if err != nil {
		c.t.Fatalf("%s: transport on %s: %v", nd.id, bind, err)
	}
	nd.trans = trans
}

func (c *cluster) startRaft(nd *node) {
	c.t.Helper()
	snaps, err := raft.NewFileSnapshotStore(nd.snaps, 2, c.logw)
	if err != nil {
		c.t.Fatal(err)
	}
	nd.fsm = newKVFSM()
	r, err := raft.NewRaft(c.config(nd.id), nd.fsm, nd.store, nd.store, snaps, nd.trans)
	if err != nil {
		c.t.Fatalf("%s: NewRaft: %v", nd.id, err)
	}
	nd.raft = r
}

// stop shuts nd down: raft, then its transport, then its Store.
func (c *cluster) stop(nd *node) {
	c.t.Helper()
	if nd.raft != nil {
		if err := nd.raft.Shutdown().Error(); err != nil {
			c.t.Errorf("%s: shutdown: %v", nd.id, err)
		}
		nd.raft = nil
	}
	if nd.trans != nil {
		nd.trans.Close()
		nd.trans = nil
	}
	if nd.store != nil {
		if err := nd.store.Close(); err != nil {
			c.t.Errorf("%s: close store: %v", nd.id, err)
		}
		nd.store = nil
	}
}

// restart brings a stopped node back from its directories, on its address.
func (c *cluster) restart(nd *node) {
	c.t.Helper()
	c.openStores(nd, string(nd.addr))
	c.startRaft(nd)
}

func (c *cluster) live() []*node {
	var l []*node
	for _, nd := range c.nodes {
		if nd.raft != nil {
			l = append(l, nd)
		}
	}
	return l
}

// waitFor polls cond until it holds or waitLimit passes.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader waits for one live node to be leader and returns it.
func (c *cluster) leader() *node {
	c.t.Helper()
	var ld *node
	c.waitFor("a leader", func() bool {
		for _, nd := range c.live() {
			if nd.raft.State() == raft.Leader {
				ld = nd
				return true
			}
		}
		return false
	})
	return ld
}

func (c *cluster) follower() *node {
	c.t.Helper()
	ld := c.leader()
	for _, nd := range c.live() {
		if nd != ld {
			return nd
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// apply commits key=value commands for keys [from, to) and adds them to
// want. A command whose leader lost its leadership is sent again to the
// next leader (the commands are idempotent).
func (c *cluster) apply(want map[string]string, from, to int) {
	c.t.Helper()
	var todo []string
	for i := from; i < to; i++ {
		k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("v%d", i)
		want[k] = v
		todo = append(todo, k+"="+v)
	}
	deadline := time.Now().Add(waitLimit)
	for len(todo) > 0 {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out applying %d commands", len(todo))
		}
		ld := c.leader()
		futures := make([]raft.ApplyFuture, len(todo))
		for i, cmd := range todo {
			futures[i] = ld.raft.Apply([]byte(cmd), 5*time.Second)
		}
		var again []string
		for i, f := range futures {
			err := f.Error()
			switch {
			case err == nil:
				if resp := f.Response(); resp != nil {
					c.t.Fatalf("apply %q: %v", todo[i], resp)
				}
			case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
				errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
				again = append(again, todo[i])
			default:
				c.t.Fatalf("apply %q on %s: %v", todo[i], ld.id, err)
			}
		}
		todo = again
	}
}

// converge waits for every live node's FSM to hold want.
func (c *cluster) converge(want map[string]string) {
	c.t.Helper()
	for _, nd := range c.live() {
		c.waitFor(fmt.Sprintf("%s to apply %d keys", nd.id, len(want)), func() bool {
			return maps.Equal(nd.fsm.snapshot(), want)
		})
	}
}

// snapshot makes nd take a snapshot, which compacts its log.
func (c *cluster) snapshot(nd *node) {
	c.t.Helper()
	if err := nd.raft.Snapshot().Error(); err != nil {
		c.t.Fatalf("%s: snapshot: %v", nd.id, err)
	}
}

func indexes(t *testing.T, nd *node) (first, last uint64) {
	t.Helper()
	first, err := nd.store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	last, err = nd.store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return first, last
}

type stableState struct {
	term, voteTerm uint64
	voteCand       string
}

func readStableState(t *testing.T, s *Store) stableState {
	t.Helper()
	var st stableState
	var err error
	if st.term, err = s.GetUint64([]byte("CurrentTerm")); err != nil {
		t.Fatalf("CurrentTerm: %v", err)
	}
	if st.voteTerm, err = s.GetUint64([]byte("LastVoteTerm")); err != nil && !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("LastVoteTerm: %v", err)
	}
	v, err := s.Get([]byte("LastVoteCand"))
	if err != nil && !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("LastVoteCand: %v", err)
	}
	st.voteCand = string(v)
	return st
}

func TestRaftCluster(t *testing.T) {
	if _, err := net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	start := time.Now()
	c := newCluster(t, 3)
	want := map[string]string{}

	// Election and replication.
	ld := c.leader()
	t.Logf("%v: leader %s", time.Since(start).Round(time.Millisecond), ld.id)
	c.apply(want, 0, 100)
	c.converge(want)
	t.Logf("%v: 100 commands on every node", time.Since(start).Round(time.Millisecond))

	// A follower stopped and restarted from its directory comes back with
	// its term, vote and log, and catches up.
	f := c.follower()
	fr := f.raft
	if err := fr.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	f.raft = nil
	before := readStableState(t, f.store)
	_, lastBefore := indexes(t, f)
	if before.term == 0 || lastBefore < 100 {
		t.Fatalf("%s before restart: term %d, last index %d", f.id, before.term, lastBefore)
	}
	c.stop(f)
	c.apply(want, 100, 150) // two of three still commit
	c.openStores(f, string(f.addr))
	if after := readStableState(t, f.store); after != before {
		t.Fatalf("%s reopened with stable state %+v, had %+v", f.id, after, before)
	}
	if _, last := indexes(t, f); last != lastBefore {
		t.Fatalf("%s reopened with last index %d, had %d", f.id, last, lastBefore)
	}
	c.startRaft(f)
	c.converge(want)
	t.Logf("%v: %s restarted (term %d, vote %q in term %d, last index %d) and caught up",
		time.Since(start).Round(time.Millisecond), f.id, before.term, before.voteCand, before.voteTerm, lastBefore)

	// Snapshots on every node compact their logs from the front.
	c.apply(want, 150, 250)
	c.converge(want)
	for _, nd := range c.live() {
		c.snapshot(nd)
		first, last := indexes(t, nd)
		if first <= 1 || last-first+1 < 20 {
			t.Fatalf("%s after its snapshot holds %d to %d; want a compacted log keeping TrailingLogs (20)", nd.id, first, last)
		}
		t.Logf("%s after its snapshot holds %d to %d", nd.id, first, last)
	}

	// A follower that is down while the leader compacts past its log
	// comes back through InstallSnapshot: its log restarts after the
	// snapshot's index, leaving a gap no append could have made.
	f = c.follower()
	c.stop(f)
	s, err := Open(f.dir, testWALOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, lastBefore = indexes(t, &node{store: s})
	s.Close()
	c.apply(want, 250, 400)
	ld = c.leader()
	c.snapshot(ld)
	ldFirst, _ := indexes(t, ld)
	if ldFirst <= lastBefore+1 {
		t.Fatalf("leader %s holds from %d, which %s (last %d) can reach without a snapshot", ld.id, ldFirst, f.id, lastBefore)
	}
	c.restart(f)
	c.converge(want)
	// The FSM is restored before raft empties the log; entries committed
	// after the snapshot reach f's log only after that.
	c.apply(want, 400, 450)
	c.converge(want)
	first, last := indexes(t, f)
	if first <= lastBefore+1 {
		t.Fatalf("%s caught up but its log holds %d to %d after ending at %d: no InstallSnapshot", f.id, first, last, lastBefore)
	}
	t.Logf("%v: %s restarted after compaction (its log ended at %d, the leader's starts at %d) and caught up by snapshot; it now holds %d to %d",
		time.Since(start).Round(time.Millisecond), f.id, lastBefore, ldFirst, first, last)

	// A restart of the node that received the snapshot: its log from the
	// snapshot on is durable.
	c.stop(f)
	c.restart(f)
	c.apply(want, 450, 460)
	c.converge(want)

	// Every node's log agrees with the leader's where both hold entries.
	ld = c.leader()
	for _, nd := range c.live() {
		if nd == ld {
			continue
		}
		lf, ll := indexes(t, ld)
		nf, nl := indexes(t, nd)
		for i := max(lf, nf); i <= min(ll, nl); i++ {
			var a, b raft.Log
			if err := ld.store.GetLog(i, &a); err != nil {
				t.Fatal(err)
			}
			if err := nd.store.GetLog(i, &b); err != nil {
				t.Fatal(err)
			}
			if a.Term != b.Term || !bytes.Equal(a.Data, b.Data) || a.Type != b.Type {
				t.Fatalf("index %d: leader %s has %+v, %s has %+v", i, ld.id, a, nd.id, b)
			}
		}
	}
	t.Logf("%v: done", time.Since(start).Round(time.Millisecond))
}
