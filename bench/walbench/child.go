package walbench

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/wal"
)

// ChildConfig is one trial's instructions, for ringstore's child and for the
// peers' program alike.
type ChildConfig struct {
	// Dir is the benchmark directory; the trial makes a fresh directory in
	// it and removes it afterwards.
	Dir string `json:"dir"`
	// Mode is fsync-per-write, device-fdatasync or ringstore here; a peer's
	// name (raft-wal, tidwall-wal, etcd-wal) in the peers' program.
	Mode string `json:"mode"`
	// IOMode is ringstore's backend: uring, sqpoll or syscall.
	IOMode    string `json:"io_mode,omitempty"`
	Writers   int    `json:"writers"`
	EntrySize int    `json:"entry_size"`
	// WriteSize is the device-group mode's write: the bytes of a group of
	// Writers entries as the log writes them.
	WriteSize  int           `json:"write_size,omitempty"`
	Duration   time.Duration `json:"duration"`
	WarmupFrac float64       `json:"warmup_frac"`
	// KeepEntries, when set, truncates ringstore's log from the front as
	// the trial goes (every 100 ms, as a raft log after snapshots), keeping
	// about this many of its newest entries: the log's steady state.
	KeepEntries uint64 `json:"keep_entries,omitempty"`
	// Recycle opens ringstore's log with RecycleSegments.
	Recycle bool `json:"recycle,omitempty"`
	// Advance, for the device-group mode, writes each group after the last
	// in a file fallocated ahead (as the log writes a fresh segment)
	// instead of in place.
	Advance bool `json:"advance,omitempty"`
	// Written, with Advance, writes the file full once before the trial
	// (untimed), as a recycled segment's file was, and wraps around at its
	// end: every group overwrites written blocks, at advancing offsets.
	Written bool `json:"written,omitempty"`
	// Batch, for a peer, is the most entries one call of its batch API
	// takes, fed by a batching leader; 0: one entry per call.
	Batch int `json:"batch,omitempty"`
	// LSM, for ringstore's log, puts every entry the log acknowledges into
	// a kv store without a log beside it (lsmBeside): the memtable
	// inserts, table flushes and compactions that a kv Put adds to its
	// log append, at the log's rate.
	LSM bool `json:"lsm,omitempty"`
}

// Keys of bench.Trial.Extra that the wal benchmark fills in.
const (
	ExtraEntries = "entries" // entries made durable in the measured part, by the log's own count
	ExtraFlushes = "flushes" // flushes (fdatasync or fsync) in the measured part
	// ExtraFlushesInferred is 1 when flushes were not counted but follow
	// from the code: one sync per call.
	ExtraFlushesInferred = "flushes_inferred"
	// ExtraFlushP50us and ExtraFlushP99us are the log's own group flush
	// latency (one write and its fdatasync) over the measured part, from
	// wal.Stats.FlushLatency: ringstore only.
	ExtraFlushP50us = "flush_p50_us"
	ExtraFlushP99us = "flush_p99_us"
	// ExtraRotations is how many segments the steady-state mode's log
	// sealed and made in the trial (while its truncations removed them),
	// ExtraRecycled how many of those it made from truncated segments'
	// files; both from the log's open, the untimed prefill included.
	ExtraRotations = "rotations"
	ExtraRecycled  = "recycled"
)

// steadyRotations is how many segments the steady-state mode's log fills
// (untimed, truncated as it goes) before the trial: the first segments of
// a log are new files, the later ones (RecycleSegments) truncated ones'.
const steadyRotations = 3

func init() { bench.RegisterChild(Workload, child) }

// TrialDir makes a fresh empty directory for one trial in base; remove
// deletes it with everything in it.
func TrialDir(base string) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp(base, "ringstore-bench-wal-")
	if err != nil {
		return "", nil, fmt.Errorf("trial directory: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Counts are a log's running totals: entries made durable, flushes, and,
// where the log keeps one, its flush latency histogram (zero otherwise).
type Counts struct {
	Entries, Flushes uint64
	FlushLatency     wal.LatencyHistogram
}

// Counters reads a log's running totals.
type Counters func() Counts

// Measure runs c.Writers goroutines, each calling appendOne in a loop with
// its own c.EntrySize payload (the first 8 bytes change with every call),
// first for c.WarmupFrac of c.Duration (not counted), then for c.Duration.
// Latency is that of one appendOne call, waits for locks or groups included.
// The measured part ends at c.Duration: calls still running then are not
// counted, nor is the CPU spent finishing them. counters, when not nil,
// gives the entries and flushes of the measured part (the difference of its
// values at its start and at its end).
func Measure(c ChildConfig, appendOne func(writer int, payload []byte) error, counters Counters) (bench.Trial, error) {
	return measure(c, func(w int, p []byte) (time.Duration, error) {
		t0 := time.Now()
		err := appendOne(w, p)
		return time.Since(t0), err
	}, counters)
}

// measure is Measure with op timing itself: it returns the latency to
// record.
func measure(c ChildConfig, op func(writer int, payload []byte) (time.Duration, error), counters Counters) (bench.Trial, error) {
	if c.Writers < 1 || c.EntrySize < 8 || c.Duration <= 0 {
		return bench.Trial{}, fmt.Errorf("bad config: %d writers, %d-byte entries, %s", c.Writers, c.EntrySize, c.Duration)
	}
	payloads := make([][]byte, c.Writers)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for w := range payloads {
		payloads[w] = make([]byte, c.EntrySize)
		for i := range payloads[w] {
			payloads[w][i] = byte(rng.Uint32())
		}
	}
	var c0, c1 Counts
	seq := make([]uint64, c.Writers) // calls so far, per writer, into the payload
	t := bench.Timed{
		Workers: c.Writers,
		Step: func(w int) (int64, time.Duration, error) {
			p := payloads[w]
			binary.LittleEndian.PutUint64(p, seq[w])
			seq[w]++
			lat, err := op(w, p)
			return 1, lat, err
		},
	}
	if counters != nil {
		t.Start = func() { c0 = counters() }
		t.Stop = func() { c1 = counters() }
	}
	tr, err := t.RunWarm(c.Duration, c.WarmupFrac)
	if err == nil && counters != nil {
		tr.Extra = map[string]float64{ExtraEntries: float64(c1.Entries - c0.Entries), ExtraFlushes: float64(c1.Flushes - c0.Flushes)}
		if h := c1.FlushLatency.Sub(c0.FlushLatency); h.Count() > 0 {
			tr.Extra[ExtraFlushP50us] = float64(h.Quantile(0.5)) / 1e3
			tr.Extra[ExtraFlushP99us] = float64(h.Quantile(0.99)) / 1e3
		}
	}
	return tr, err
}

// PerCall returns Counters for a log that makes each call durable with one
// sync of its own and counts nothing itself: calls counts the calls that
// succeeded. The trial is marked as having its flushes inferred.
func PerCall(calls *atomic.Uint64) Counters {
	return func() Counts { n := calls.Load(); return Counts{Entries: n, Flushes: n} }
}

// MarkInferred marks a trial whose flushes were inferred (see PerCall).
func MarkInferred(t bench.Trial) bench.Trial {
	if t.Extra == nil {
		t.Extra = map[string]float64{}
	}
	t.Extra[ExtraFlushesInferred] = 1
	return t
}

// child runs one trial of fsync-per-write, device-fdatasync or ringstore.
func child(raw json.RawMessage) (bench.Trial, error) {
	var c ChildConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return bench.Trial{}, err
	}
	dir, remove, err := TrialDir(c.Dir)
	if err != nil {
		return bench.Trial{}, err
	}
	defer remove()
	switch c.Mode {
	case "fsync-per-write":
		return fsyncPerWrite(c, dir)
	case "device-fdatasync":
		return deviceFdatasync(c, dir)
	case "device-group":
		return deviceGroup(c, dir)
	case "ringstore":
		return ringstore(c, dir)
	case "kv":
		return kvWrite(c, dir)
	}
	return bench.Trial{}, fmt.Errorf("unknown mode %q", c.Mode)
}

// fsyncPerWrite appends to a plain file and fdatasyncs after every write:
// what a program does without a log library. Writers share the file under
// a mutex (the benchmark runs it with one).
func fsyncPerWrite(c ChildConfig, dir string) (bench.Trial, error) {
	f, err := os.OpenFile(filepath.Join(dir, "append.log"), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return bench.Trial{}, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var mu sync.Mutex
	var calls atomic.Uint64
	tr, err := Measure(c, func(_ int, p []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.Write(p); err != nil {
			return err
		}
		if err := fdatasync(fd); err != nil {
			return fmt.Errorf("fdatasync: %w", err)
		}
		calls.Add(1)
		return nil
	}, PerCall(&calls))
	return MarkInferred(tr), err
}

// deviceFdatasync measures the device's own flush: a 1 KiB pwrite in place
// into an already written block of a preallocated file, then fdatasync,
// timing only the fdatasync. Overwriting written blocks leaves the file
// system no metadata to commit, so what is left is the device's flush.
func deviceFdatasync(c ChildConfig, dir string) (bench.Trial, error) {
	f, err := newDeviceFile(filepath.Join(dir, "device.dat"), 1<<20, true)
	if err != nil {
		return bench.Trial{}, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var mu sync.Mutex
	var calls atomic.Uint64
	tr, err := measure(c, func(_ int, p []byte) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.WriteAt(p, 0); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := fdatasync(fd); err != nil {
			return 0, fmt.Errorf("fdatasync: %w", err)
		}
		lat := time.Since(t0)
		calls.Add(1)
		return lat, nil
	}, PerCall(&calls))
	return MarkInferred(tr), err
}

// deviceGroup measures what one group commit cannot beat: a write of
// c.WriteSize bytes made durable, timed, one after another. In place each
// write overwrites the same written blocks of a preallocated file, leaving
// the file system no metadata to commit; with c.Advance each goes to the
// next bytes of a file fallocated ahead, so that each flush also converts
// the extent it wrote, as the log's flushes into a fresh segment do; with
// c.Advance and c.Written each goes to the next bytes of a file written
// full beforehand, wrapping around at its end, as the log's flushes into
// a recycled segment do. With
// c.IOMode "uring" the write is the log's own on io_uring, one RWF_DSYNC
// write submitted and waited for on an inline engine; otherwise a pwrite
// and fdatasync. With c.Writers above 1 (advancing only) that many writes
// are in flight at once, each at its own offset: on io_uring all through
// one ring (the engine's ring goroutine), as a log keeping that many
// groups in flight would submit them.
func deviceGroup(c ChildConfig, dir string) (bench.Trial, error) {
	if c.Writers > 1 && !c.Advance {
		return bench.Trial{}, fmt.Errorf("device-group: %d writes in flight need advancing writes (each its own offset)", c.Writers)
	}
	c.EntrySize = 8 // the payload is the group, not the entry measure makes
	group := make([]byte, c.WriteSize)
	step := int64(0)
	size := max(1<<20, int64(c.WriteSize))
	if c.Advance {
		step, size = int64(c.WriteSize), max(deviceAdvanceBytes, 16*int64(c.WriteSize))
	}
	path := filepath.Join(dir, "device.dat")
	var f *os.File
	var iof *ioengine.File
	// next is the offset of the next write; mu is held shared by each
	// write and alone by create, which replaces the file.
	var next atomic.Int64
	var mu sync.RWMutex
	// create makes the file afresh: written once unless the groups advance
	// through fallocated space.
	create := func() error {
		if f != nil {
			f.Close()
			os.Remove(path)
		}
		var err error
		if f, err = newDeviceFile(path, size, !c.Advance || c.Written); err != nil {
			return err
		}
		iof = ioengine.NewFile(f)
		next.Store(0)
		return nil
	}
	if err := create(); err != nil {
		return bench.Trial{}, err
	}
	defer func() { f.Close() }()
	write := func(off int64) error {
		if _, err := f.WriteAt(group, off); err != nil {
			return err
		}
		if err := fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("fdatasync: %w", err)
		}
		return nil
	}
	if c.IOMode != "" {
		mode, err := ioengine.ParseIOMode(c.IOMode)
		if err != nil {
			return bench.Trial{}, err
		}
		base, err := ioengine.New(ioengine.Options{Mode: mode, Logf: func(string, ...any) {}})
		if err != nil {
			return bench.Trial{}, err
		}
		defer base.Close()
		if mode == ioengine.URing && base.Backend() != ioengine.BackendURing {
			return bench.Trial{}, fmt.Errorf("wanted io mode %s, the engine is on %s", mode, base.Backend())
		}
		eng := base
		if c.Writers == 1 {
			if eng, err = base.NewInline(); err != nil {
				return bench.Trial{}, err
			}
			defer eng.Close()
		}
		write = func(off int64) error {
			return eng.Do([]ioengine.Request{{Op: ioengine.OpWrite, File: iof, Off: off, Buf: group, DSync: true}})
		}
	}
	var calls atomic.Uint64
	tr, err := measure(c, func(int, []byte) (time.Duration, error) {
		mu.RLock()
		off := next.Add(step) - step
		for off+int64(len(group)) > size {
			mu.RUnlock()
			mu.Lock()
			if next.Load()+int64(len(group)) > size {
				if c.Written {
					next.Store(0) // written space all through
				} else if err := create(); err != nil { // untimed
					mu.Unlock()
					return 0, err
				}
			}
			mu.Unlock()
			mu.RLock()
			off = next.Add(step) - step
		}
		defer mu.RUnlock()
		t0 := time.Now()
		if err := write(off); err != nil {
			return 0, err
		}
		lat := time.Since(t0)
		calls.Add(1)
		return lat, nil
	}, PerCall(&calls))
	return MarkInferred(tr), err
}

// deviceAdvanceBytes is the file the advancing device-group mode writes
// through before it makes the next: a segment's size (tests make it
// smaller).
var deviceAdvanceBytes int64 = 64 << 20

// newDeviceFile creates the file the device modes write: size bytes,
// preallocated (fallocate), and with written also written once, so that
// overwriting it converts no unwritten extent (a metadata change); synced.
func newDeviceFile(path string, size int64, written bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := preallocate(int(f.Fd()), size); err != nil {
		f.Close()
		return nil, fmt.Errorf("fallocate: %w", err)
	}
	if written {
		if _, err := f.WriteAt(make([]byte, size), 0); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kvWrite runs c.Writers goroutines each putting its own keys (one
// c.EntrySize value per kv.DB.Put, durable when it returns) into one store.
func kvWrite(c ChildConfig, dir string) (bench.Trial, error) {
	mode, err := ioengine.ParseIOMode(c.IOMode)
	if err != nil {
		return bench.Trial{}, err
	}
	db, err := kv.Open(filepath.Join(dir, "kv"), kv.Options{IOMode: mode, Logf: func(string, ...any) {}})
	if err != nil {
		return bench.Trial{}, err
	}
	if st := db.Stats(); (mode == ioengine.URing) != (st.Backend == ioengine.BackendURing) {
		db.Close()
		return bench.Trial{}, fmt.Errorf("wanted io mode %s, the store is on %s: %s", mode, st.Backend, st.FallbackCause)
	}
	next := make([]uint64, c.Writers)
	tr, err := Measure(c, func(w int, p []byte) error {
		var key [16]byte
		binary.BigEndian.PutUint64(key[:8], uint64(w))
		binary.BigEndian.PutUint64(key[8:], next[w])
		next[w]++
		return db.Put(key[:], p)
	}, func() Counts {
		st := db.Stats()
		return Counts{Entries: st.Writes, Flushes: st.LogFlushes}
	})
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	return tr, err
}

// truncateAsItGoes cuts the log's front every 100 ms to keep about keep
// entries, until stop is closed (keep 0: it does nothing).
func truncateAsItGoes(l *wal.Log, keep uint64, stop <-chan struct{}) error {
	if keep == 0 {
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-tick.C:
			if last := l.LastSeq(); last > keep {
				if err := l.TruncateFront(last - keep); err != nil {
					return err
				}
			}
		}
	}
}

// prefill appends from c.Writers goroutines, untimed, until done says the
// log has reached the state the trial starts from (at most a minute).
func prefill(l *wal.Log, c ChildConfig, done func(wal.Stats) bool) error {
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, c.Writers)
	var stop atomic.Bool
	for range c.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, c.EntrySize)
			for !stop.Load() {
				if _, err := l.Append(p); err != nil {
					errs <- err
					stop.Store(true)
					return
				}
			}
		}()
	}
	for !done(l.Stats()) && time.Now().Before(deadline) && !stop.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("prefill: %w", err)
	default:
	}
	if !done(l.Stats()) {
		return fmt.Errorf("prefill: the log did not reach its steady state in a minute: %+v", l.Stats())
	}
	return nil
}

// ringstore runs c.Writers goroutines appending to one wal.Log.
func ringstore(c ChildConfig, dir string) (bench.Trial, error) {
	mode, err := ioengine.ParseIOMode(c.IOMode)
	if err != nil {
		return bench.Trial{}, err
	}
	want := map[ioengine.IOMode]ioengine.Backend{ioengine.URing: ioengine.BackendURing, ioengine.SQPoll: ioengine.BackendSQPoll, ioengine.Syscall: ioengine.BackendSyscall}
	w, ok := want[mode]
	if !ok {
		return bench.Trial{}, fmt.Errorf("io mode %s: want uring, sqpoll or syscall", mode)
	}
	l, err := wal.Open(filepath.Join(dir, "wal"), wal.Options{IOMode: mode, RecycleSegments: c.Recycle})
	if err != nil {
		return bench.Trial{}, err
	}
	if st := l.Stats(); st.Backend != w {
		l.Close()
		return bench.Trial{}, fmt.Errorf("wanted backend %s, the log is on %s: %s", w, st.Backend, st.FallbackReason)
	}
	stop, truncated := make(chan struct{}), make(chan error, 1)
	go func() { truncated <- truncateAsItGoes(l, c.KeepEntries, stop) }()
	if c.KeepEntries > 0 {
		err = prefill(l, c, func(st wal.Stats) bool { return st.Rotations >= steadyRotations })
	}
	var tr bench.Trial
	var beside *lsmBeside
	if err == nil && c.LSM {
		beside, err = openLSMBeside(filepath.Join(dir, "lsm"), mode, c.EntrySize)
	}
	if err == nil {
		tr, err = Measure(c, func(_ int, p []byte) error {
			_, err := l.Append(p)
			if err == nil && beside != nil {
				beside.appended()
			}
			return err
		}, func() Counts {
			st := l.Stats()
			return Counts{Entries: st.Entries, Flushes: st.Flushes, FlushLatency: st.FlushLatency}
		})
	}
	close(stop)
	if terr := <-truncated; err == nil && terr != nil {
		err = fmt.Errorf("truncate: %w", terr)
	}
	if beside != nil {
		if berr := beside.close(); err == nil && berr != nil {
			err = fmt.Errorf("the LSM beside the log: %w", berr)
		}
	}
	if c.KeepEntries > 0 && err == nil {
		if tr.Extra == nil {
			tr.Extra = map[string]float64{}
		}
		st := l.Stats()
		tr.Extra[ExtraRotations], tr.Extra[ExtraRecycled] = float64(st.Rotations), float64(st.Recycled)
	}
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	return tr, err
}

// lsmBeside is a kv store without a log (kv.Options.DisableWAL) that one
// goroutine of its own keeps level with a log: for every entry the log
// acknowledges it puts one value of the entry's size, under keys laid out
// as kvWrite's 64 writers lay theirs, in batches of up to lsmBatch. Beside
// the log's 64 writers it does the work a kv Put adds to its log append —
// memtable inserts, table flushes, compactions, their writes and fsyncs —
// at the log's rate, without kv's commit path: what the log makes with it
// beside is the most kv Put could make.
type lsmBeside struct {
	db    *kv.DB
	count atomic.Uint64 // entries the log acknowledged
	kick  chan struct{}
	stop  chan struct{}
	done  chan error
}

// lsmBatch is the most puts one write of the store beside the log takes.
const lsmBatch = 64

func openLSMBeside(dir string, mode ioengine.IOMode, valueSize int) (*lsmBeside, error) {
	db, err := kv.Open(dir, kv.Options{IOMode: mode, DisableWAL: true, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, err
	}
	b := &lsmBeside{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan error, 1)}
	value := make([]byte, valueSize)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	go func() { b.done <- b.run(value) }()
	return b, nil
}

// appended counts one entry the log acknowledged and wakes the goroutine.
func (b *lsmBeside) appended() {
	b.count.Add(1)
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *lsmBeside) run(value []byte) error {
	var batch kv.Batch
	var key [16]byte
	var n uint64
	for {
		select {
		case <-b.stop:
			return nil
		case <-b.kick:
		}
		for target := b.count.Load(); n < target; {
			batch.Reset()
			for ; n < target && batch.Len() < lsmBatch; n++ {
				binary.BigEndian.PutUint64(key[:8], n%64)
				binary.BigEndian.PutUint64(key[8:], n/64)
				batch.Put(key[:], value)
			}
			if err := b.db.Write(&batch); err != nil {
				return err
			}
		}
	}
}

func (b *lsmBeside) close() error {
	close(b.stop)
	err := <-b.done
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	return err
}
