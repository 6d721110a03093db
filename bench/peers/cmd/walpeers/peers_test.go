package main

import (
	"path/filepath"
	"testing"
	"time"

	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	tidwal "github.com/tidwall/wal"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"

	"github.com/ringstore/ringstore/bench/walbench"
)

// lastIndex reopens a peer's directory and returns the last index it holds.
var lastIndex = map[string]func(t *testing.T, dir string) uint64{
	"raft-wal": func(t *testing.T, dir string) uint64 {
		meta := &metadb.BoltMetaDB{}
		defer meta.Close()
		w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		n, err := w.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		return n
	},
	"tidwall-wal": func(t *testing.T, dir string) uint64 {
		l, err := tidwal.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		n, err := l.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		return n
	},
	"etcd-wal": func(t *testing.T, dir string) uint64 {
		w, err := etcdwal.Open(zap.NewNop(), filepath.Join(dir, "etcd"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		_, _, ents, err := w.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			return 0
		}
		return ents[len(ents)-1].GetIndex()
	},
}

// TestPeers runs every peer briefly with several writers and checks that
// every acknowledged entry is there when the log is opened again.
func TestPeers(t *testing.T) {
	for _, p := range walbench.Peers {
		t.Run(p.Mode, func(t *testing.T) {
			dir := t.TempDir()
			l, err := peers[p.Mode](dir)
			if err != nil {
				t.Fatal(err)
			}
			s := &serial{p: l, next: 1}
			c := walbench.ChildConfig{Writers: 4, EntrySize: walbench.EntrySize, Duration: 50 * time.Millisecond}
			tr, err := walbench.Measure(c, func(_ int, b []byte) error { return s.append(b) }, walbench.PerCall(&s.calls))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.close(); err != nil {
				t.Fatal(err)
			}
			if tr.Ops <= 0 || tr.P99us < tr.P50us {
				t.Errorf("implausible trial %+v", tr)
			}
			if got, want := lastIndex[p.Mode](t, dir), s.calls.Load(); got != want {
				t.Errorf("reopened log ends at index %d, %d entries were acknowledged", got, want)
			}
		})
	}
}
