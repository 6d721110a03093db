package raftstore_test

import (
	"fmt"
	"log"
	"os"

	"github.com/hashicorp/raft"

	"github.com/ringstore/ringstore/wal"
	"github.com/ringstore/ringstore/wal/raftstore"
)

// Store raft log entries (one wal entry each, durable when StoreLogs
// returns) and the current term, compact the log's front as raft does
// after a snapshot, and open the store again: raft's view is as it was.
func Example() {
	dir, err := os.MkdirTemp("", "raftstore-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := raftstore.Open(dir, wal.Options{SegmentSize: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	var logs []*raft.Log
	for i, cmd := range []string{"set x 1", "set y 2", "del x", "set z 3"} {
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: []byte(cmd)})
	}
	if err := s.StoreLogs(logs); err != nil {
		log.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		log.Fatal(err)
	}
	if err := s.DeleteRange(1, 2); err != nil { // a snapshot covers 1 and 2
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	s, err = raftstore.Open(dir, wal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	term, _ := s.GetUint64([]byte("CurrentTerm"))
	fmt.Printf("indexes %d..%d, term %d\n", first, last, term)
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %s\n", l.Index, l.Data)
	}
	// Output:
	// indexes 3..4, term 1
	// 3 del x
	// 4 set z 3
}
