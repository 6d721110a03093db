package kvbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/ringstore/ringstore/bench"
)

// Systems and modes of ChildConfig.
const (
	SystemRingstore = "ringstore"
	SystemPebble    = "pebble"
	SystemDevice    = "device"

	ModeLoad        = "load"         // write the data set (not a measured mode)
	ModeMultiGet    = "multiget"     // one MultiGet per batch (ringstore)
	ModeMultiGetHot = "multiget-hot" // the same, every data block already in the block cache (the CPU's limit)
	ModeGetSerial   = "get-serial"   // a loop of Get over the batch, one at a time
	ModeGetParallel = "get-parallel" // the batch's Gets on as many goroutines as keys
	ModeDevice      = "random-reads" // 4 KiB O_DIRECT random reads on io_uring, Callers × batches of Batch
)

// ChildConfig is one trial's instructions, for ringstore's children and
// the peers' program alike.
type ChildConfig struct {
	System string `json:"system"`
	Mode   string `json:"mode"`
	// IOMode is ringstore's backend: uring or syscall.
	IOMode string `json:"io_mode,omitempty"`
	// Dir is the database directory (or, for the device, the directory of
	// the files to read).
	Dir       string `json:"dir"`
	Keys      uint64 `json:"keys"`
	Batch     int    `json:"batch"`
	Callers   int    `json:"callers"`
	CacheSize int64  `json:"cache_size"`
	// Dist is the key distribution: uniform or zipfian.
	Dist       string        `json:"dist"`
	Seed       uint64        `json:"seed"`
	Duration   time.Duration `json:"duration"`
	WarmupFrac float64       `json:"warmup_frac"`
	// Cgroup is the directory of the memory cgroup to join first; "" for
	// none.
	Cgroup string `json:"cgroup,omitempty"`
	// TimeoutSeconds ends a child that runs longer, with its goroutines'
	// stacks on stderr. 0: none.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

// Keys of bench.Trial.Extra. Those marked "parent" are filled in by the
// parent after the child exited.
const (
	XBlockReads   = "block_reads"    // 4 KiB blocks read from the device in the measured part (ringstore: its block cache's bytes loaded ÷ 4 KiB)
	XKVBlockReads = "kv_block_reads" // kv Stats.BlockReads over the measured part
	XCacheHits    = "cache_hits"     // block cache hits in the measured part
	XCacheMisses  = "cache_misses"   // block cache misses
	XEngineCalls  = "engine_calls"   // I/O engine calls (one per MultiGet submission)
	XMultiGets    = "multigets"
	XReadBytes    = "read_bytes"            // /proc/self/io read_bytes over the measured part
	XMaxRSS       = "max_rss_bytes"         // getrusage ru_maxrss of the child, whole life
	XLoadKeys     = "load_keys"             // load mode: keys written
	XDiskBytes    = "disk_bytes"            // load mode: bytes of the database's files afterwards
	XCgroupPeak   = "cgroup_peak_bytes"     // parent
	XCgroupHits   = "cgroup_limit_hits"     // parent
	XCgroupOOM    = "cgroup_oom_kills"      // parent
	XResident     = "resident_before_bytes" // parent: bytes of the database's files still in the page cache after the drop
)

// Counters reads running totals (block reads, cache hits, ...) by name; the
// measured part's figure is the difference of two readings.
type Counters func() map[string]float64

// BatchFunc reads the keys of one batch; idx[i] is the index of keys[i] in
// the data set (for CheckValue). It runs on caller's own goroutine.
type BatchFunc func(caller int, keys [][]byte, idx []uint64) error

// StartChild does what every child does first: join the memory cgroup
// named in the config and arm the timeout.
func StartChild(c ChildConfig) error {
	if c.Cgroup != "" {
		if err := bench.JoinMemCgroup(c.Cgroup); err != nil {
			return err
		}
	}
	if c.TimeoutSeconds > 0 {
		d := time.Duration(c.TimeoutSeconds * float64(time.Second))
		time.AfterFunc(d, func() {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "%s %s: timed out after %s; goroutines (first %d KiB):\n%s\n", c.System, c.Mode, d, len(buf)>>10, buf)
			os.Exit(1)
		})
	}
	return nil
}

// ParseConfig decodes a child's config.
func ParseConfig(raw json.RawMessage) (ChildConfig, error) {
	var c ChildConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("bad child config: %w", err)
	}
	return c, nil
}

// Measure runs c.Callers goroutines, each calling read with batches of
// c.Batch keys drawn from c.Dist over c.Keys keys (a chooser of its own per
// caller, seeded from c.Seed), first for c.WarmupFrac of c.Duration (not
// counted), then for c.Duration. Trial.Ops counts keys; latency is that of
// one batch. A batch still running when the time is up is not counted.
// counters, when not nil, is read at the start and the end of the measured
// part and the differences go into Trial.Extra.
func Measure(c ChildConfig, read BatchFunc, counters Counters) (bench.Trial, error) {
	if c.Callers < 1 || c.Batch < 1 || c.Keys == 0 || c.Duration <= 0 {
		return bench.Trial{}, fmt.Errorf("bad config: %d callers, batch %d, %d keys, %s", c.Callers, c.Batch, c.Keys, c.Duration)
	}
	choosers := make([]Chooser, c.Callers)
	for g := range choosers {
		ch, err := NewChooser(c.Dist, c.Keys, c.Seed*1000003+uint64(g)+1)
		if err != nil {
			return bench.Trial{}, err
		}
		choosers[g] = ch
	}
	type callerState struct {
		keys [][]byte
		idx  []uint64
		buf  []byte
	}
	states := make([]callerState, c.Callers)
	for g := range states {
		s := &states[g]
		s.keys = make([][]byte, c.Batch)
		s.idx = make([]uint64, c.Batch)
		s.buf = make([]byte, 0, c.Batch*MaxKeyLen)
	}
	var before, after map[string]float64
	var io0, io1 int64
	var ioErr error
	t := bench.Timed{
		Workers: c.Callers,
		Step: func(g int) (int64, time.Duration, error) {
			s := &states[g]
			s.buf = s.buf[:0]
			for i := range s.keys {
				s.idx[i] = choosers[g].Next()
				at := len(s.buf)
				s.buf = AppendKey(s.buf, s.idx[i])
				s.keys[i] = s.buf[at:len(s.buf):len(s.buf)]
			}
			t0 := time.Now()
			err := read(g, s.keys, s.idx)
			return int64(len(s.keys)), time.Since(t0), err
		},
		Start: func() {
			if counters != nil {
				before = counters()
			}
			io0, _ = readProcIO()
		},
		Stop: func() {
			io1, ioErr = readProcIO()
			if counters != nil {
				after = counters()
			}
		},
	}
	tr, err := t.RunWarm(c.Duration, c.WarmupFrac)
	if err != nil {
		return tr, err
	}
	tr.Extra = map[string]float64{}
	for k, v := range after {
		tr.Extra[k] = v - before[k]
	}
	if ioErr == nil {
		tr.Extra[XReadBytes] = float64(io1 - io0)
	}
	if rss, rerr := maxRSS(); rerr == nil {
		tr.Extra[XMaxRSS] = float64(rss)
	}
	return tr, nil
}

// Fanout runs the Gets of one batch on as many goroutines as the batch has
// keys: goroutine i of the fanout always takes key i. One caller uses a
// Fanout at a time.
type Fanout struct {
	get  func(slot int, key []byte, idx uint64) error
	work []chan struct{}
	wg   sync.WaitGroup
	keys [][]byte // written by Do before the goroutines are woken
	idx  []uint64
	errs []error // errs[i] written by goroutine i
}

// NewFanout starts width goroutines that call get.
func NewFanout(width int, get func(slot int, key []byte, idx uint64) error) *Fanout {
	f := &Fanout{get: get, work: make([]chan struct{}, width), errs: make([]error, width)}
	for i := range f.work {
		f.work[i] = make(chan struct{}, 1)
		go func() {
			for range f.work[i] {
				f.errs[i] = f.get(i, f.keys[i], f.idx[i])
				f.wg.Done()
			}
		}()
	}
	return f
}

// Do gets every key of the batch, at once, and waits for all of them.
func (f *Fanout) Do(keys [][]byte, idx []uint64) error {
	if len(keys) > len(f.work) {
		return fmt.Errorf("kvbench: batch of %d keys on a fanout of %d", len(keys), len(f.work))
	}
	f.keys, f.idx = keys, idx
	f.wg.Add(len(keys))
	for i := range keys {
		f.work[i] <- struct{}{}
	}
	f.wg.Wait()
	return errors.Join(f.errs[:len(keys)]...)
}

// Close ends the goroutines.
func (f *Fanout) Close() {
	for _, w := range f.work {
		close(w)
	}
}

// ErrWrongValue is returned when a read gives a value that is not the
// key's, or no value for a key that was loaded.
var ErrWrongValue = errors.New("kvbench: wrong value")

// Check returns an error unless found and v is value idx of key.
func Check(key []byte, idx uint64, v []byte, found bool) error {
	if !found {
		return fmt.Errorf("%w: key %q (index %d) not found", ErrWrongValue, key, idx)
	}
	if !CheckValue(v, idx) {
		return fmt.Errorf("%w: key %q (index %d): %d-byte value is not its own", ErrWrongValue, key, idx, len(v))
	}
	return nil
}
