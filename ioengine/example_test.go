package ioengine_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/ioengine"
)

// Read two parts of a file in one batch: on io_uring one submission, on
// the syscall backend two preads, with the same results either way.
func Example() {
	dir, err := os.MkdirTemp("", "ioengine-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data")
	if err := os.WriteFile(path, []byte("hello, batched world"), 0o644); err != nil {
		log.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	e, err := ioengine.New(ioengine.Options{}) // io_uring unless RINGSTORE_IO_URING says otherwise
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	a, b := make([]byte, 5), make([]byte, 5)
	reqs := []ioengine.Request{
		{Op: ioengine.OpRead, Fd: int(f.Fd()), Off: 0, Buf: a},
		{Op: ioengine.OpRead, Fd: int(f.Fd()), Off: 15, Buf: b},
	}
	if err := e.Do(reqs); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(a[:reqs[0].N]), string(b[:reqs[1].N]))
	// Output: hello world
}
