package wal_test

import (
	"fmt"
	"log"
	"os"

	"github.com/ringstore/ringstore/wal"
)

// Open a log, append entries (each durable when Append returns), read them
// back, and open it again: everything acknowledged is there.
func Example() {
	dir, err := os.MkdirTemp("", "wal-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := wal.Open(dir, wal.Options{SegmentSize: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []string{"first", "second", "third"} {
		if _, err := l.Append([]byte(p)); err != nil {
			log.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	l, err = wal.Open(dir, wal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	it := l.Iterator(l.FirstSeq())
	for it.Next() {
		fmt.Printf("%d %s\n", it.Seq(), it.Payload())
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 first
	// 2 second
	// 3 third
}
