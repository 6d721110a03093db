package state_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/state"
)

// Count events per key a mini-batch at a time (one MultiGet to load what
// the batch reads, one kv batch to write what it changed), take a
// checkpoint with the input's position, and restore it.
func Example() {
	root, err := os.MkdirTemp("/var/tmp", "state-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	b, err := state.Open(filepath.Join(root, "live"), state.Options{})
	if err != nil {
		log.Fatal(err)
	}
	counts, err := state.NewValue(b, "count", 0, state.Int64Codec)
	if err != nil {
		log.Fatal(err)
	}
	events := []string{"apple", "pear", "apple", "plum", "apple", "pear"}
	mb := b.NewMiniBatch()
	lookups := make([]state.Lookup, len(events))
	for i, key := range events {
		lookups[i] = counts.Want(mb, []byte(key), nil) // declare the reads
	}
	if err := mb.Load(); err != nil { // one MultiGet for every distinct key
		log.Fatal(err)
	}
	for _, l := range lookups {
		n, _, err := counts.Get(mb, l) // sees this batch's own writes
		if err != nil {
			log.Fatal(err)
		}
		if err := counts.Put(mb, l, n+1); err != nil {
			log.Fatal(err)
		}
	}
	if err := mb.Commit(); err != nil { // one kv batch
		log.Fatal(err)
	}
	cp := filepath.Join(root, "checkpoint-1")
	if err := b.Checkpoint(context.Background(), cp, []byte("offset=6")); err != nil {
		log.Fatal(err)
	}
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}

	r, meta, err := state.Restore(cp, filepath.Join(root, "restored"), state.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	counts, err = state.NewValue(r, "count", 0, state.Int64Codec)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("restored at %s\n", meta)
	mb = r.NewMiniBatch()
	keys := []string{"apple", "pear", "plum", "fig"}
	for _, key := range keys {
		counts.Want(mb, []byte(key), nil)
	}
	if err := mb.Load(); err != nil {
		log.Fatal(err)
	}
	for _, key := range keys {
		n, ok, err := counts.Get(mb, counts.At([]byte(key), nil))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %d %v\n", key, n, ok)
	}
	// Output:
	// restored at offset=6
	// apple 3 true
	// pear 2 true
	// plum 1 true
	// fig 0 false
}
