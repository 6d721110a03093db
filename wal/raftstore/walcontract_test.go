package raftstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ringstore/ringstore/wal"
)

// TestWALContract pins down the wal behaviour the Store is built on, so
// that a change in the wal shows here first, named: sequence numbers are
// raft indexes, TruncateFront past the end moves an empty log's start
// forward, TruncateBack(FirstSeq()-1) empties a log and keeps its start,
// and all of it survives a reopen.
func TestWALContract(t *testing.T) {
	dir := newDir(t)
	open := func() *wal.Log {
		t.Helper()
		l, err := wal.Open(dir, testWALOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	l := open()
	reopen := func() {
		t.Helper()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = open()
	}
	bounds := func(step string, first, last uint64) {
		t.Helper()
		if f, la := l.FirstSeq(), l.LastSeq(); f != first || la != last {
			t.Fatalf("%s: FirstSeq, LastSeq = %d, %d; want %d, %d", step, f, la, first, last)
		}
	}
	appendN := func(step string, want uint64, n int) {
		t.Helper()
		p := make([][]byte, n)
		for i := range p {
			p[i] = fmt.Appendf(nil, "payload %d", want+uint64(i))
		}
		got, err := l.AppendBatch(p)
		if err != nil || got != want {
			t.Fatalf("%s: AppendBatch of %d = %d, %v; want first seq %d", step, n, got, err, want)
		}
	}
	readOK := func(step string, seq uint64) {
		t.Helper()
		p, err := l.ReadAt(seq)
		if err != nil || string(p) != fmt.Sprintf("payload %d", seq) {
			t.Fatalf("%s: ReadAt(%d) = %q, %v", step, seq, p, err)
		}
	}
	notFound := func(step string, seq uint64) {
		t.Helper()
		if _, err := l.ReadAt(seq); !errors.Is(err, wal.ErrNotFound) {
			t.Fatalf("%s: ReadAt(%d) = %v; want wal.ErrNotFound", step, seq, err)
		}
	}

	bounds("new log", 1, 0)
	notFound("new log", 1)
	appendN("new log", 1, 30)
	bounds("30 appended", 1, 30)
	readOK("30 appended", 30)

	if err := l.TruncateFront(21); err != nil {
		t.Fatal(err)
	}
	bounds("TruncateFront(21)", 21, 30)
	notFound("TruncateFront(21)", 20)
	reopen()
	bounds("TruncateFront(21), reopened", 21, 30)
	readOK("TruncateFront(21), reopened", 21)

	// Empty from the back: the start stays, the next append gets it.
	if err := l.TruncateBack(20); err != nil {
		t.Fatal(err)
	}
	bounds("TruncateBack(20)", 21, 20)
	notFound("TruncateBack(20)", 21)
	reopen()
	bounds("TruncateBack(20), reopened", 21, 20)
	if err := l.TruncateBack(19); err == nil {
		t.Fatal("TruncateBack below FirstSeq()-1 succeeded")
	}
	appendN("after TruncateBack(20)", 21, 5)
	reopen()
	bounds("21..25, reopened", 21, 25)
	readOK("21..25, reopened", 21)

	// Empty and moved forward, as after a raft snapshot install.
	if err := l.TruncateBack(20); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFront(500); err != nil {
		t.Fatal(err)
	}
	bounds("TruncateFront(500) of an empty log", 500, 499)
	reopen()
	bounds("TruncateFront(500), reopened", 500, 499)
	for i := uint64(500); i < 3500; i += 500 { // several 64 KiB segments
		appendN("after TruncateFront(500)", i, 500)
	}
	readOK("500..3499", 500)
	readOK("500..3499", 3499)
	notFound("500..3499", 499)

	// TruncateFront past the end of a non-empty log empties it too.
	if err := l.TruncateFront(5000); err != nil {
		t.Fatal(err)
	}
	bounds("TruncateFront(5000) past the end", 5000, 4999)
	reopen()
	bounds("TruncateFront(5000), reopened", 5000, 4999)
	appendN("after TruncateFront(5000)", 5000, 2)

	// TruncateBack into a sealed segment, then appends in a new one.
	if err := l.TruncateFront(5001); err != nil {
		t.Fatal(err)
	}
	for i := uint64(5002); i < 7002; i += 500 {
		appendN("5001..", i, 500)
	}
	if err := l.TruncateBack(5100); err != nil {
		t.Fatal(err)
	}
	bounds("TruncateBack(5100)", 5001, 5100)
	appendN("after TruncateBack(5100)", 5101, 10)
	reopen()
	bounds("5001..5110, reopened", 5001, 5110)
	readOK("5001..5110, reopened", 5100)
	readOK("5001..5110, reopened", 5101)
	readOK("5001..5110, reopened", 5110)
	notFound("5001..5110, reopened", 5111)
}
