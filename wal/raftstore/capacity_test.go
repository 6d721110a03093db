package raftstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ringstore/ringstore/wal"
)

// logsOfSize returns logs from index first on whose wal entries encode to
// exactly total bytes, each about 1,000 bytes of data.
func logsOfSize(t *testing.T, first uint64, total int) []*raft.Log {
	t.Helper()
	var logs []*raft.Log
	overhead := wal.EncodedLen(encodedLen(&raft.Log{}))
	for i := first; total > 0; i++ {
		d := min(1000, total-overhead)
		if rest := total - overhead - d; rest > 0 && rest < overhead {
			d -= overhead // leave room for a last log of its own
		}
		if d < 0 {
			t.Fatalf("%d bytes left: less than one log's %d", total, overhead)
		}
		l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, d)}
		total -= wal.EncodedLen(encodedLen(l))
		logs = append(logs, l)
	}
	if total != 0 {
		t.Fatalf("logs overshoot by %d bytes", -total)
	}
	return logs
}

// Under RecycleSegments a segment's entries end before its stale table, so
// one AppendBatch carries less than the segment minus its header and
// trailer. The store batches by the log's MaxBatchBytes: a StoreLogs
// between the two (which the store once sent as one batch, failing with
// ErrEntryTooLarge) and one of exactly MaxBatchBytes both succeed.
func TestStoreLogsRecycledCapacity(t *testing.T) {
	dir := newDir(t)
	opts := testWALOptions()
	opts.RecycleSegments = true
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	capacity := s.Log().MaxBatchBytes()
	frameOnly := testSegmentSize - wal.SegmentHeaderSize - wal.TrailerSize
	if capacity >= frameOnly {
		t.Fatalf("MaxBatchBytes %d under RecycleSegments, want less than %d (the segment without header and trailer)", capacity, frameOnly)
	}
	// The old computed capacity is more than the log takes in one batch.
	over := logsOfSize(t, 1, frameOnly)
	payloads := make([][]byte, len(over))
	for i, l := range over {
		payloads[i] = encodeLog(nil, l)
	}
	if _, err := s.Log().AppendBatch(payloads); !errors.Is(err, wal.ErrEntryTooLarge) {
		t.Fatalf("AppendBatch of %d bytes (segment minus header and trailer): %v, want ErrEntryTooLarge", frameOnly, err)
	}
	if err := s.StoreLogs(over); err != nil {
		t.Fatalf("StoreLogs of %d bytes of entries: %v", frameOnly, err)
	}
	exact := logsOfSize(t, over[len(over)-1].Index+1, capacity)
	before := s.Log().Stats().Appends
	if err := s.StoreLogs(exact); err != nil {
		t.Fatalf("StoreLogs of exactly MaxBatchBytes (%d): %v", capacity, err)
	}
	if n := s.Log().Stats().Appends - before; n != 1 {
		t.Errorf("StoreLogs of exactly MaxBatchBytes made %d AppendBatch calls, want 1", n)
	}
	for _, want := range append(over, exact...) {
		var l raft.Log
		if err := s.GetLog(want.Index, &l); err != nil || !logsEqual(&l, want) {
			t.Fatalf("GetLog(%d): %v", want.Index, err)
		}
	}
}
