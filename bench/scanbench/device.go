package scanbench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// DeviceOptions configure the device's sequential-read measurement.
type DeviceOptions struct {
	BlockSize int           // bytes per read; default 1 MiB
	Depth     int           // reads in flight; default 16
	Duration  time.Duration // how long to read; default 3s
	IOMode    ioengine.IOMode
}

func (o DeviceOptions) withDefaults() DeviceOptions {
	if o.BlockSize == 0 {
		o.BlockSize = 1 << 20
	}
	if o.Depth == 0 {
		o.Depth = 16
	}
	if o.Duration == 0 {
		o.Duration = 3 * time.Second
	}
	return o
}

func (o DeviceOptions) String() string {
	size := fmt.Sprintf("%d-byte", o.BlockSize)
	if o.BlockSize > 0 && o.BlockSize%(1<<10) == 0 {
		size = fmt.Sprintf("%d KiB", o.BlockSize>>10)
	}
	return fmt.Sprintf("%s O_DIRECT reads, %d in flight, %s, I/O mode %s", size, o.Depth, o.Duration, o.IOMode)
}

// DeviceResult is what measureDevice saw.
type DeviceResult struct {
	Bytes     int64   // bytes the reads returned
	ReadBytes int64   // /proc/self/io read_bytes over the same time
	Seconds   float64 // wall time
	Backend   ioengine.Backend
}

// GBps returns bytes per second in units of 10^9.
func (r DeviceResult) GBps() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Seconds / 1e9
}

// measureDevice reads files one after the other, front to back, with
// O_DIRECT, o.Depth reads of o.BlockSize in flight through one engine, for
// o.Duration, starting over at the first file when the last one ends. Each of
// o.Depth goroutines takes the next block from a shared cursor, so the reads
// in flight are consecutive blocks: what a sequential scan at that depth
// asks of the device.
func measureDevice(files []string, o DeviceOptions) (DeviceResult, error) {
	o = o.withDefaults()
	if len(files) == 0 {
		return DeviceResult{}, errors.New("device: no files to read")
	}
	if o.BlockSize <= 0 || o.BlockSize%directio.BlockSize != 0 || o.Depth < 1 || o.Duration < 0 {
		return DeviceResult{}, fmt.Errorf("device: bad options %s: the block size must be a positive multiple of %d and the depth at least 1", o, directio.BlockSize)
	}
	type file struct {
		f    *os.File
		size int64
	}
	var fs []file
	defer func() {
		for _, f := range fs {
			f.f.Close()
		}
	}()
	var total int64
	for _, p := range files {
		f, err := directio.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return DeviceResult{}, fmt.Errorf("device: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return DeviceResult{}, fmt.Errorf("device: %w", err)
		}
		fs = append(fs, file{f, st.Size()})
		total += st.Size()
	}
	if total == 0 {
		return DeviceResult{}, errors.New("device: the files are empty")
	}
	eng, err := ioengine.New(ioengine.Options{Mode: o.IOMode})
	if err != nil {
		return DeviceResult{}, fmt.Errorf("device: %w", err)
	}
	defer eng.Close()

	var mu sync.Mutex
	cur, off := 0, int64(0) // the next block; guarded by mu
	next := func() (fd int, at int64, n int) {
		mu.Lock()
		defer mu.Unlock()
		for off >= fs[cur].size {
			cur, off = (cur+1)%len(fs), 0
		}
		fd, at = int(fs[cur].f.Fd()), off
		n = o.BlockSize
		if rest := fs[cur].size - off; rest < int64(n) {
			// The last block of a file: read whole 4 KiB blocks; the read
			// comes back short at end of file.
			n = int((rest + directio.BlockSize - 1) &^ (directio.BlockSize - 1))
		}
		off += int64(n)
		return fd, at, n
	}

	io0, err := readProcIO()
	if err != nil {
		return DeviceResult{}, fmt.Errorf("device: %w", err)
	}
	var bytes atomic.Int64
	var stop atomic.Bool
	errs := make([]error, o.Depth)
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := range o.Depth {
		buf, err := directio.Alloc(o.BlockSize)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			return DeviceResult{}, fmt.Errorf("device: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer directio.Free(buf)
			for !stop.Load() {
				fd, at, n := next()
				k, err := eng.ReadAt(fd, buf[:n], at)
				if err != nil && !(errors.Is(err, io.EOF) && k > 0) {
					errs[g] = fmt.Errorf("device: read of %d bytes at offset %d: %w", n, at, err)
					stop.Store(true)
					return
				}
				bytes.Add(int64(k))
			}
		}()
	}
	time.Sleep(o.Duration)
	stop.Store(true)
	wg.Wait()
	secs := time.Since(t0).Seconds()
	io1, err := readProcIO()
	if err != nil {
		return DeviceResult{}, fmt.Errorf("device: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return DeviceResult{}, err
	}
	return DeviceResult{Bytes: bytes.Load(), ReadBytes: io1.ReadBytes - io0.ReadBytes, Seconds: secs, Backend: eng.Backend()}, nil
}
