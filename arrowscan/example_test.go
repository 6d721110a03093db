package arrowscan_test

import (
	"fmt"
	"log"
	"os"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bufpool"
)

// Scan two columns of an Arrow IPC file through a buffer pool: only the
// projected columns' bytes are read, with O_DIRECT, into the pool's frames.
func Example() {
	dir, err := os.MkdirTemp("/var/tmp", "arrowscan-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	paths, err := events.Generate(dir, events.GenOptions{Rows: 10_000, RowsPerBatch: 4096, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}

	pool, err := bufpool.New(arrowscan.PoolOptions(bufpool.Options{Budget: 8 << 20, FrameSize: 64 << 10}))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	f, err := arrowscan.Open(paths[0], arrowscan.Options{Mode: arrowscan.ModePool, Pool: pool})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	sc, err := f.Scan([]string{"ts", "bytes"})
	if err != nil {
		log.Fatal(err)
	}
	var rows int64
	for sc.Next() {
		rec := sc.Record() // valid until the next Next
		rows += rec.NumRows()
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	sc.Close()
	fmt.Println(rows, "rows,", sc.Schema().NumFields(), "columns")
	// Output: 10000 rows, 2 columns
}
