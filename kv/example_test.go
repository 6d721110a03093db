package kv_test

import (
	"fmt"
	"log"
	"os"

	"github.com/ringstore/ringstore/kv"
)

// Write a batch atomically, then read several keys with one MultiGet: the
// block reads of every key the memtable does not hold go to the kernel in
// one submission.
func Example() {
	dir, err := os.MkdirTemp("/var/tmp", "kv-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := kv.Open(dir, kv.Options{CacheSize: 1 << 20, MemtableSize: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var b kv.Batch
	b.Put([]byte("user/1"), []byte("alice"))
	b.Put([]byte("user/2"), []byte("bob"))
	if err := db.Write(&b); err != nil { // durable and visible when it returns
		log.Fatal(err)
	}
	if err := db.Flush(); err != nil { // into a table: the reads below go to the device
		log.Fatal(err)
	}
	vals, found, err := db.MultiGet([][]byte{[]byte("user/1"), []byte("user/3"), []byte("user/2")})
	if err != nil {
		log.Fatal(err)
	}
	for i, v := range vals {
		fmt.Printf("%v %q\n", found[i], v)
	}
	// Output:
	// true "alice"
	// false ""
	// true "bob"
}
