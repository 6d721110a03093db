package bufpool_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// Pin the frames that hold two byte ranges of a file (loaded once, with
// O_DIRECT, all misses of the call in one engine call), read them, unpin.
func Example() {
	dir, err := os.MkdirTemp("/var/tmp", "bufpool-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data")
	data := make([]byte, 64<<10)
	copy(data[100:], "first")
	copy(data[40000:], "second")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
	f, err := directio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		log.Fatal(err)
	}
	file := ioengine.NewFile(f) // closed after the pool, which reads it
	defer file.Close()

	pool, err := bufpool.New(bufpool.Options{FrameSize: 16 << 10, Budget: 256 << 10})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	id, err := pool.Register(file, int64(len(data)), path)
	if err != nil {
		log.Fatal(err)
	}
	spans := []bufpool.Span{{File: id, Off: 100, Len: 5}, {File: id, Off: 40000, Len: 6}}
	frames, err := pool.Pin(spans, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i, s := range spans {
		fr := frames[i] // each span lies in one frame here
		off := s.Off - fr.Offset()
		fmt.Println(string(fr.Bytes()[off : off+s.Len]))
		fr.Unpin()
	}
	// Output:
	// first
	// second
}
