package nexmark

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/state"
)

// Checkpoints
//
// Checkpoints are the job's, aligned as Flink aligns them. Every
// RunConfig.Checkpoint events the source sends every worker barrier n
// after its events before the position X (the next event id). A worker
// takes the barrier after those events: it checkpoints its state into
// Dir/ck-g<G>-p<P>-n<n>-w<i> and passes the barrier to the final stage,
// which (q4, q5) holds each worker's later records until every barrier n
// has come and then writes its own state to Dir/ck-g<G>-p<P>-n<n>-final.
// When every part is written the job checkpoint is complete: the file
// Dir/ck-g<G>-p<P>-n<n>.done is written last (then the older checkpoints
// of the generation are removed). A restore takes the newest complete job
// checkpoint, and every worker and the final stage restore from it, so
// all resume at X. Each worker's part is renamed into place whole
// (state.Backend.Checkpoint), its meta recording what the worker needs
// beside its state:
//
//	+--------+------+-----+-----+-----------+-------------+--------+-----------+---------+
//	| "nxck" | rows | sum | xor | watermark | parallelism | worker | keyGroups | nRanges |
//	| 4 B    | 8 B  | 8 B | 8 B | 8 B       | 2 B         | 2 B    | 2 B       | 2 B     |
//	+--------+------+-----+-----+-----------+-------------+--------+-----------+---------+
//	then nRanges × [first group 2 B][last group 2 B][from 8 B]; big endian.
//
// The ranges give, for each key group of the worker's range, the first
// event id it has not processed (X for every group of an aligned
// checkpoint). The timers are state (state.TimerService): they are in the
// checkpoint with the rest, and move with their key groups.
//
// With another parallelism than the checkpoint's the run is rescaled into
// generation G+1: each new worker takes its key groups from the parts of
// the old workers whose ranges overlap its own (state.RestoreKeyGroups),
// their positions, and the lowest of their watermarks; each old worker's
// rows go to the new worker that holds its first key group; the final
// stage's inputs all start at the lowest watermark it had. Before any
// event is processed the rescaled job takes checkpoint 0 of G+1, so a
// crash in a rescale restores from generation G again.

const metaMagic = "nxck"

// groupFrom is the first event id the key groups first..last process.
type groupFrom struct {
	first, last int
	from        int64
}

// checkpointMeta is what a worker's part of a checkpoint records beside
// the state.
type checkpointMeta struct {
	sink                           Sink
	wm                             int64
	parallelism, worker, keyGroups int
	from                           []groupFrom
}

func (m checkpointMeta) encode() []byte {
	b := []byte(metaMagic)
	for _, v := range []uint64{m.sink.Rows, m.sink.Sum, m.sink.Xor, uint64(m.wm)} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	for _, v := range []int{m.parallelism, m.worker, m.keyGroups, len(m.from)} {
		b = binary.BigEndian.AppendUint16(b, uint16(v))
	}
	for _, r := range m.from {
		b = binary.BigEndian.AppendUint16(b, uint16(r.first))
		b = binary.BigEndian.AppendUint16(b, uint16(r.last))
		b = binary.BigEndian.AppendUint64(b, uint64(r.from))
	}
	return b
}

// decodeCheckpointMeta reads what encode wrote, the meta of the checkpoint
// part in dir, or says what is wrong: a *ringstore.CorruptError naming dir
// (the meta is a record in the part's state, at no file offset).
func decodeCheckpointMeta(dir string, b []byte) (checkpointMeta, error) {
	var m checkpointMeta
	const head = 4 + 4*8 + 4*2
	if len(b) < head || string(b[:4]) != metaMagic {
		return m, damaged(dir, -1, "a checkpoint meta of %d bytes that does not start with %q (a checkpoint of an earlier version?)", len(b), metaMagic)
	}
	u64 := func(i int) uint64 { return binary.BigEndian.Uint64(b[4+8*i:]) }
	u16 := func(i int) int { return int(binary.BigEndian.Uint16(b[36+2*i:])) }
	m.sink, m.wm = Sink{Rows: u64(0), Sum: u64(1), Xor: u64(2)}, int64(u64(3))
	m.parallelism, m.worker, m.keyGroups = u16(0), u16(1), u16(2)
	n := u16(3)
	if m.parallelism < 1 || m.worker >= m.parallelism || m.keyGroups < m.parallelism {
		return m, damaged(dir, -1, "a checkpoint meta of worker %d of %d with %d key groups", m.worker, m.parallelism, m.keyGroups)
	}
	rest := b[head:]
	if len(rest) != 12*n {
		return m, damaged(dir, -1, "a checkpoint meta with %d key-group ranges in %d bytes, want %d", n, len(rest), 12*n)
	}
	for i := range n {
		r := groupFrom{int(binary.BigEndian.Uint16(rest[12*i:])), int(binary.BigEndian.Uint16(rest[12*i+2:])), int64(binary.BigEndian.Uint64(rest[12*i+4:]))}
		if r.first > r.last || r.last >= m.keyGroups || i > 0 && r.first <= m.from[i-1].last {
			return m, damaged(dir, -1, "a checkpoint meta's key-group range %d: %d–%d of %d groups, out of order", i, r.first, r.last, m.keyGroups)
		}
		m.from = append(m.from, r)
	}
	return m, nil
}

// damaged is damage in what the job stored: in the file or checkpoint part
// path at offset off ("" and -1 for a value in state, where neither is
// known).
func damaged(path string, off int64, format string, args ...any) error {
	return &ringstore.CorruptError{Path: path, Offset: off, What: fmt.Sprintf(format, args...)}
}

// fromOf is the first event id of group g the meta's worker had not
// processed (0 for a group it does not list).
func (m checkpointMeta) fromOf(g int) int64 {
	for _, r := range m.from {
		if g >= r.first && g <= r.last {
			return r.from
		}
	}
	return 0
}

// jobCheckpoint names job checkpoint n of generation gen, taken with
// parallelism workers.
type jobCheckpoint struct {
	dir                 string
	gen, parallelism, n int
}

func (j jobCheckpoint) prefix() string {
	return filepath.Join(j.dir, fmt.Sprintf("ck-g%d-p%d-n%06d", j.gen, j.parallelism, j.n))
}
func (j jobCheckpoint) worker(i int) string { return fmt.Sprintf("%s-w%d", j.prefix(), i) }
func (j jobCheckpoint) final() string       { return j.prefix() + "-final" }
func (j jobCheckpoint) done() string        { return j.prefix() + ".done" }

// complete records that every part of the job checkpoint is written, then
// removes the generation's older checkpoints: a restore takes this one.
func (j jobCheckpoint) complete() error {
	if err := writeFileAtomic(j.done(), nil); err != nil {
		return fmt.Errorf("nexmark: completing checkpoint %s: %w", filepath.Base(j.prefix()), err)
	}
	return removeCheckpoints(j.dir, func(c jobCheckpoint) bool { return c.gen < j.gen || c.gen == j.gen && c.n < j.n })
}

// parseCheckpoint reads the job checkpoint a name in dir belongs to.
func parseCheckpoint(dir, name string) (jobCheckpoint, bool) {
	j := jobCheckpoint{dir: dir}
	k, _ := fmt.Sscanf(name, "ck-g%d-p%d-n%d", &j.gen, &j.parallelism, &j.n)
	return j, k == 3
}

// removeCheckpoints removes every file and directory of the job
// checkpoints in dir that drop says to.
func removeCheckpoints(dir string, drop func(jobCheckpoint) bool) error {
	names, err := filepath.Glob(filepath.Join(dir, "ck-*"))
	if err != nil {
		return err
	}
	partials, _ := filepath.Glob(filepath.Join(dir, ".ck-*"))
	for _, p := range append(names, partials...) {
		base := filepath.Base(p)
		if base[0] == '.' {
			base = base[1:]
		}
		if j, ok := parseCheckpoint(dir, base); ok && drop(j) {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("nexmark: removing %s: %w", p, err)
			}
		}
	}
	return nil
}

// findCheckpoint returns the newest complete job checkpoint in dir (nil:
// none) and removes every other checkpoint: older ones, and newer ones a
// crash left incomplete (which a run would otherwise write over).
func findCheckpoint(dir string) (*jobCheckpoint, error) {
	names, err := filepath.Glob(filepath.Join(dir, "ck-*.done"))
	if err != nil {
		return nil, err
	}
	var newest *jobCheckpoint
	for _, name := range names {
		if j, ok := parseCheckpoint(dir, filepath.Base(name)); ok && (newest == nil || j.gen > newest.gen || j.gen == newest.gen && j.n > newest.n) {
			newest = &j
		}
	}
	err = removeCheckpoints(dir, func(j jobCheckpoint) bool { return newest == nil || j != *newest })
	return newest, err
}

// restoreWorker restores worker w (its range, parallelism and index set)
// from job checkpoint j: its own part with the same parallelism, or its
// key groups from the old workers' parts with another. It sets the
// worker's backend, per-group positions, sink and watermark.
func (w *worker) restoreWorker(j *jobCheckpoint, live string, opts state.Options) error {
	w.wm = math.MaxInt64 // the lowest of the parts' watermarks (takeMeta)
	if j.parallelism == w.cfg.Parallelism {
		b, raw, err := state.Restore(j.worker(w.i), live, opts)
		if err != nil {
			return err
		}
		w.backend = b
		m, err := decodeCheckpointMeta(j.worker(w.i), raw)
		if err != nil {
			return fmt.Errorf("nexmark: restoring worker %d: %w", w.i, err)
		}
		if m.keyGroups != w.keyGroups || m.worker != w.i {
			return fmt.Errorf("nexmark: checkpoint %s: worker %d with %d key groups, restored as worker %d with %d", j.worker(w.i), m.worker, m.keyGroups, w.i, w.keyGroups)
		}
		w.takeMeta(m, true)
		return nil
	}
	// A rescale: the old workers whose ranges overlap this one's.
	var sources []string
	for i := range j.parallelism {
		if r := state.RangeForSubtask(i, j.parallelism, w.keyGroups); r.Last >= w.rng.First && r.First <= w.rng.Last {
			sources = append(sources, j.worker(i))
		}
	}
	b, metas, err := state.RestoreKeyGroups(sources, live, w.rng, opts)
	if err != nil {
		return err
	}
	w.backend = b
	for k, raw := range metas {
		m, err := decodeCheckpointMeta(sources[k], raw)
		if err != nil {
			return fmt.Errorf("nexmark: restoring worker %d: %w", w.i, err)
		}
		if m.keyGroups != w.keyGroups {
			return fmt.Errorf("nexmark: checkpoint %s: %d key groups, restored with %d", sources[k], m.keyGroups, w.keyGroups)
		}
		own := state.SubtaskForGroup(state.RangeForSubtask(m.worker, m.parallelism, m.keyGroups).First, w.cfg.Parallelism, w.keyGroups) == w.i
		w.takeMeta(m, own)
	}
	return nil
}

// takeMeta takes a checkpoint's positions for the worker's key groups,
// its watermark (the lowest of several), and its rows if own.
func (w *worker) takeMeta(m checkpointMeta, own bool) {
	r := state.RangeForSubtask(m.worker, m.parallelism, m.keyGroups)
	for g := max(r.First, w.rng.First); g <= min(r.Last, w.rng.Last); g++ {
		w.from[g-w.rng.First] = m.fromOf(g)
	}
	if own {
		w.out.Sink.Add(m.sink)
	}
	w.wm = min(w.wm, m.wm)
}

// checkpoint writes the worker's part of job checkpoint j: its state, with
// its positions (next, the event id after the barrier, for every group not
// already past it), its sink and its watermark.
func (w *worker) checkpoint(j jobCheckpoint, next int64) error {
	m := checkpointMeta{sink: w.out.Sink, wm: w.wm, parallelism: w.cfg.Parallelism, worker: w.i, keyGroups: w.keyGroups}
	for g := w.rng.First; g <= w.rng.Last; g++ {
		from := max(next, w.from[g-w.rng.First])
		if n := len(m.from); n > 0 && m.from[n-1].from == from {
			m.from[n-1].last = g
		} else {
			m.from = append(m.from, groupFrom{g, g, from})
		}
	}
	return w.backend.Checkpoint(context.Background(), j.worker(w.i), m.encode())
}

// ack is one part of job checkpoint n written (or its error).
type ack struct {
	n   int
	err error
}

// coordinate completes each job checkpoint of generation cur once need
// parts have acknowledged it, until acks is closed; it returns the parts'
// and its own errors.
func coordinate(cur jobCheckpoint, need int, acks <-chan ack) error {
	var errs []error
	count := map[int]int{}
	for a := range acks {
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		if count[a.n]++; count[a.n] == need {
			j := cur
			j.n = a.n
			errs = append(errs, j.complete())
			delete(count, a.n)
		}
	}
	return errors.Join(errs...)
}
