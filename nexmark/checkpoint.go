package nexmark

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/ringstore/ringstore/state"
)

// Checkpoints
//
// Each worker checkpoints its state on its own, every RunConfig.Checkpoint
// of its events, into Dir/ck-g<G>-p<P>-w<i>-<n>: generation G, taken with
// parallelism P, worker i, its n-th. A checkpoint is renamed into place
// whole (state.Backend.Checkpoint). Its meta records what the worker needs
// beside its state to resume exactly:
//
//	+--------+------+-----+-----+-----------+-------------+--------+-----------+--------+
//	| "nxck" | rows | sum | xor | watermark | parallelism | worker | keyGroups | nRanges |
//	| 4 B    | 8 B  | 8 B | 8 B | 8 B       | 2 B         | 2 B    | 2 B       | 2 B    |
//	+--------+------+-----+-----+-----------+-------------+--------+-----------+--------+
//	then nRanges × [first group 2 B][last group 2 B][from 8 B]; big endian.
//
// The timers are state (state.TimerService): they are in the checkpoint
// with the rest, and move with their key groups.
//
// The ranges give, for each key group of the worker's range, the first
// event id it has not processed: every event of the group before it is in
// the state. Within one generation every group of a worker has the same
// position but after a rescale, until the groups have caught up.
//
// A restore takes the newest generation whose every worker has a whole
// checkpoint (generation 0 is whole from the start: a worker without a
// checkpoint starts from nothing), and each worker's newest in it. With
// the same parallelism each worker clones its own. With another, the run
// is rescaled into generation G+1: each new worker takes its key groups
// from the checkpoints of the old workers whose ranges overlap its own
// (state.RestoreKeyGroups), their positions per key group, their timers
// (with the state: timers are state), and the lowest of their watermarks; each old worker's
// rows go to the new worker that holds its first key group. Every new
// worker checkpoints at once, so a crash before all have leaves
// generation G+1 incomplete and the next restore rescales from G again.

const metaMagic = "nxck"

// groupFrom is the first event id the key groups first..last process.
type groupFrom struct {
	first, last int
	from        int64
}

// checkpointMeta is what a checkpoint records beside the state.
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

// decodeCheckpointMeta reads what encode wrote, or says what is wrong.
func decodeCheckpointMeta(b []byte) (checkpointMeta, error) {
	var m checkpointMeta
	const head = 4 + 4*8 + 4*2
	if len(b) < head || string(b[:4]) != metaMagic {
		return m, fmt.Errorf("a checkpoint meta of %d bytes that does not start with %q (a checkpoint of an earlier version?)", len(b), metaMagic)
	}
	u64 := func(i int) uint64 { return binary.BigEndian.Uint64(b[4+8*i:]) }
	u16 := func(i int) int { return int(binary.BigEndian.Uint16(b[36+2*i:])) }
	m.sink, m.wm = Sink{Rows: u64(0), Sum: u64(1), Xor: u64(2)}, int64(u64(3))
	m.parallelism, m.worker, m.keyGroups = u16(0), u16(1), u16(2)
	n := u16(3)
	if m.parallelism < 1 || m.worker >= m.parallelism || m.keyGroups < m.parallelism {
		return m, fmt.Errorf("a checkpoint meta of worker %d of %d with %d key groups", m.worker, m.parallelism, m.keyGroups)
	}
	rest := b[head:]
	if len(rest) < 12*n {
		return m, fmt.Errorf("a checkpoint meta with %d key-group ranges cut short at %d bytes", n, len(b))
	}
	for i := range n {
		r := groupFrom{int(binary.BigEndian.Uint16(rest[12*i:])), int(binary.BigEndian.Uint16(rest[12*i+2:])), int64(binary.BigEndian.Uint64(rest[12*i+4:]))}
		if r.first > r.last || r.last >= m.keyGroups || i > 0 && r.first <= m.from[i-1].last {
			return m, fmt.Errorf("a checkpoint meta's key-group range %d: %d–%d of %d groups, out of order", i, r.first, r.last, m.keyGroups)
		}
		m.from = append(m.from, r)
	}
	if tail := len(rest) - 12*n; tail != 0 {
		return m, fmt.Errorf("a checkpoint meta with %d bytes after its key-group ranges", tail)
	}
	return m, nil
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

// checkpointName is the directory of a worker's n-th checkpoint.
func checkpointName(dir string, gen, parallelism, worker, n int) string {
	return filepath.Join(dir, fmt.Sprintf("ck-g%d-p%d-w%d-%06d", gen, parallelism, worker, n))
}

// generation is one generation's checkpoints: each worker's newest whole
// one and its number.
type generation struct {
	gen, parallelism int
	newest           map[int]string
	n                map[int]int
}

// whole says whether a restore can start from the generation.
func (g *generation) whole() bool { return g.gen == 0 || len(g.newest) == g.parallelism }

// findCheckpoints returns the generation a restore starts from (nil: none)
// and removes what no restore can use: directories without their store's
// manifest (a crash in a checkpoint of an earlier version leaves them) and
// every generation after the chosen one (a rescale a crash cut short).
func findCheckpoints(dir string) (*generation, error) {
	names, err := filepath.Glob(filepath.Join(dir, "ck-g*-p*-w*-*"))
	if err != nil {
		return nil, err
	}
	gens := map[int]*generation{}
	for _, name := range names {
		var gen, p, w, n int
		if k, err := fmt.Sscanf(filepath.Base(name), "ck-g%d-p%d-w%d-%d", &gen, &p, &w, &n); err != nil || k != 4 {
			continue
		}
		if !state.IsCheckpoint(name) {
			if err := os.RemoveAll(name); err != nil {
				return nil, fmt.Errorf("nexmark: removing the incomplete checkpoint %s: %w", name, err)
			}
			continue
		}
		g := gens[gen]
		if g == nil {
			g = &generation{gen: gen, parallelism: p, newest: map[int]string{}, n: map[int]int{}}
			gens[gen] = g
		}
		if g.parallelism != p {
			return nil, fmt.Errorf("nexmark: %s: generation %d has checkpoints of parallelism %d and %d", name, gen, g.parallelism, p)
		}
		if n > g.n[w] {
			g.newest[w], g.n[w] = name, n
		}
	}
	var order []int
	for gen := range gens {
		order = append(order, gen)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(order)))
	var chosen *generation
	for _, gen := range order {
		if gens[gen].whole() {
			chosen = gens[gen]
			break
		}
	}
	for _, gen := range order {
		if chosen != nil && gen <= chosen.gen {
			break
		}
		for _, name := range names {
			var g int
			if k, _ := fmt.Sscanf(filepath.Base(name), "ck-g%d-", &g); k == 1 && g == gen {
				if err := os.RemoveAll(name); err != nil {
					return nil, fmt.Errorf("nexmark: removing %s of an incomplete rescale: %w", name, err)
				}
			}
		}
	}
	return chosen, nil
}

// restoreWorker restores worker w (its range, parallelism and index set)
// from generation g: its own checkpoint with the same parallelism, or its
// key groups from the old workers' with another. It sets the worker's
// backend, per-group positions, sink, watermark and timers, and the
// generation and number its next checkpoint takes.
func (w *worker) restoreWorker(g *generation, live string, opts state.Options) error {
	if g.parallelism == w.cfg.Parallelism {
		w.gen, w.cks = g.gen, g.n[w.i]
		name := g.newest[w.i]
		if name == "" { // generation 0, before the worker's first checkpoint
			var err error
			w.backend, err = state.Open(live, opts)
			return err
		}
		b, raw, err := state.Restore(name, live, opts)
		if err != nil {
			return err
		}
		w.backend = b
		m, err := decodeCheckpointMeta(raw)
		if err != nil {
			return fmt.Errorf("nexmark: checkpoint %s: %w", name, err)
		}
		if m.keyGroups != w.keyGroups || m.worker != w.i {
			return fmt.Errorf("nexmark: checkpoint %s: worker %d with %d key groups, restored as worker %d with %d", name, m.worker, m.keyGroups, w.i, w.keyGroups)
		}
		w.wm = math.MaxInt64
		w.takeMeta(m, true)
		return nil
	}
	// A rescale: the old workers whose ranges overlap this one's.
	w.gen, w.cks, w.rescaled = g.gen+1, 0, true
	var sources []string
	absent := false
	for i := range g.parallelism {
		r := state.RangeForSubtask(i, g.parallelism, w.keyGroups)
		if r.Last < w.rng.First || r.First > w.rng.Last {
			continue
		}
		if name := g.newest[i]; name != "" {
			sources = append(sources, name)
		} else {
			absent = true
		}
	}
	var metas [][]byte
	var err error
	if len(sources) == 0 {
		w.backend, err = state.Open(live, opts)
	} else {
		w.backend, metas, err = state.RestoreKeyGroups(sources, live, w.rng, opts)
	}
	if err != nil {
		return err
	}
	w.wm = math.MaxInt64
	if absent || len(sources) == 0 {
		w.wm = math.MinInt64
	}
	for k, raw := range metas {
		m, err := decodeCheckpointMeta(raw)
		if err != nil {
			return fmt.Errorf("nexmark: checkpoint %s: %w", sources[k], err)
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
	for g := w.rng.First; g <= w.rng.Last; g++ {
		if r := state.RangeForSubtask(m.worker, m.parallelism, m.keyGroups); r.Contains(g) {
			w.from[g-w.rng.First] = m.fromOf(g)
		}
	}
	if own {
		w.out.Sink.Add(m.sink)
	}
	w.wm = min(w.wm, m.wm)
}

// checkpoint writes the worker's state with its positions (next, the
// event id after its last, for every group not already past it), its
// sink, its watermark and its timers.
func (w *worker) checkpoint(next int64) error {
	m := checkpointMeta{sink: w.out.Sink, wm: w.wm, parallelism: w.cfg.Parallelism, worker: w.i, keyGroups: w.keyGroups}
	for g := w.rng.First; g <= w.rng.Last; g++ {
		from := max(next, w.from[g-w.rng.First])
		if n := len(m.from); n > 0 && m.from[n-1].from == from {
			m.from[n-1].last = g
		} else {
			m.from = append(m.from, groupFrom{g, g, from})
		}
	}
	w.cks++
	return w.backend.Checkpoint(checkpointName(w.cfg.Dir, w.gen, w.cfg.Parallelism, w.i, w.cks), m.encode())
}

// errShortKey: an operator used a state key that does not start with
// its 8-byte partition key.
var errShortKey = errors.New("nexmark: a state key shorter than its 8-byte partition key")
