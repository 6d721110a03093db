package nexmark_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/nexmark"
)

// Run Nexmark's query 3 (a join of auctions with their sellers, kept in
// keyed state) over 20,000 events on two workers; then run it again with a
// checkpoint every 5,000 events, stopped at event 12,000 as a crash would,
// and restored from its last checkpoint: the rows come out the same.
func Example() {
	root, err := os.MkdirTemp("/var/tmp", "nexmark-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	cfg := nexmark.RunConfig{Query: "q3", Events: 20_000, Parallelism: 2, Batch: 500, Dir: filepath.Join(root, "straight")}
	straight, err := nexmark.Run(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("straight: %d events, %d rows\n", straight.Events, straight.Sink.Rows)

	cfg.Dir, cfg.Checkpoint, cfg.StopAt = filepath.Join(root, "crashed"), 5_000, 12_000
	if _, err := nexmark.Run(cfg); err != nil { // ends after event 11,999, no final checkpoint
		log.Fatal(err)
	}
	cfg.StopAt, cfg.Restore = 0, true // from the checkpoint at 10,000: events 10,000 on again
	restored, err := nexmark.Run(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("restored: same rows: %v\n", restored.Sink == straight.Sink)
	// Output:
	// straight: 20000 events, 36 rows
	// restored: same rows: true
}
