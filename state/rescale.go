package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/ringstore/ringstore/kv"
)

// KeyGroupRange is a range of key groups, First to Last inclusive: the
// part of the key space one subtask owns.
type KeyGroupRange struct{ First, Last int }

// Contains says whether group g is in the range.
func (r KeyGroupRange) Contains(g int) bool { return g >= r.First && g <= r.Last }

// RangeForSubtask is the key groups subtask i of parallelism subtasks
// owns, as Flink assigns them (KeyGroupRangeAssignment): contiguous ranges,
// in subtask order, their sizes differing by at most one.
func RangeForSubtask(i, parallelism, maxKeyGroups int) KeyGroupRange {
	return KeyGroupRange{First: (i*maxKeyGroups + parallelism - 1) / parallelism, Last: ((i+1)*maxKeyGroups - 1) / parallelism}
}

// SubtaskForGroup is the subtask of parallelism subtasks that owns key
// group g (the inverse of RangeForSubtask).
func SubtaskForGroup(g, parallelism, maxKeyGroups int) int { return g * parallelism / maxKeyGroups }

// RestoreKeyGroups makes dir (which must not exist) the state of the key
// groups r, taken from the checkpoints sources — the checkpoints of the
// subtasks whose ranges overlap r when the state was taken with another
// parallelism — and returns it with each source's meta, in the order of
// sources. Every source must have the same number of key groups; a state
// name must have the same kind and TTL in every source (ErrIncompatible).
// The entries of r's key groups are copied (a source's other groups are
// not read); state ids are mapped by name, so sources that numbered their
// states differently merge. The sources are opened read-only and left as
// they were; on an error dir is removed. Like every restored backend, the new state is durable at its
// next Checkpoint: a crash before it restores from the sources again.
func RestoreKeyGroups(sources []string, dir string, r KeyGroupRange, opts Options) (*Backend, [][]byte, error) {
	if len(sources) == 0 {
		return nil, nil, fmt.Errorf("state: restore of key groups %d–%d: no checkpoints", r.First, r.Last)
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil, nil, fmt.Errorf("state: restore of key groups %d–%d: %s already exists", r.First, r.Last, dir)
	}
	var (
		b     *Backend
		metas [][]byte
	)
	fail := func(err error) (*Backend, [][]byte, error) {
		if b != nil {
			b.Close()
		}
		// What was built is of no use: a retry starts from the sources.
		return nil, nil, errors.Join(err, os.RemoveAll(dir))
	}
	for _, src := range sources {
		if !IsCheckpoint(src) {
			return fail(fmt.Errorf("state: restore of key groups %d–%d: %s is not a whole checkpoint", r.First, r.Last, src))
		}
		ro := opts
		ro.KV.ReadOnly = true
		ro.MaxKeyGroups = 0
		sb, err := Open(src, ro)
		if err != nil {
			return fail(fmt.Errorf("state: restore of key groups: %w", err))
		}
		if b == nil {
			o := opts
			if o.MaxKeyGroups == 0 {
				o.MaxKeyGroups = sb.MaxKeyGroups()
			}
			if b, err = Open(dir, o); err != nil {
				sb.Close()
				return fail(err)
			}
		}
		meta, err := copyKeyGroups(sb, b, r)
		sb.Close()
		if err != nil {
			return fail(fmt.Errorf("state: restore of key groups %d–%d from %s: %w", r.First, r.Last, src, err))
		}
		metas = append(metas, meta)
	}
	return b, metas, nil
}

// copyKeyGroups copies the entries of src's key groups r into dst, state
// by state, and returns src's checkpoint meta.
func copyKeyGroups(src, dst *Backend, r KeyGroupRange) ([]byte, error) {
	if src.MaxKeyGroups() != dst.MaxKeyGroups() {
		return nil, fmt.Errorf("%w: made with %d key groups, restored into state with %d", ErrIncompatible, src.MaxKeyGroups(), dst.MaxKeyGroups())
	}
	if r.First < 0 || r.Last < r.First || r.Last >= dst.MaxKeyGroups() {
		return nil, fmt.Errorf("state: key groups %d–%d are not a range of 0–%d", r.First, r.Last, dst.MaxKeyGroups()-1)
	}
	src.mu.Lock()
	names := make(map[string]registration, len(src.names))
	for name, reg := range src.names {
		names[name] = reg
	}
	src.mu.Unlock()
	var batch kv.Batch
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		err := dst.db.Write(&batch)
		batch.Reset()
		return err
	}
	for name, reg := range names {
		kind := reg.kind
		if kind == kindUnrecorded {
			return nil, fmt.Errorf("state %q has no recorded kind (made by an earlier version)", name)
		}
		id, err := dst.register(name, kind, reg.ttl)
		if err != nil {
			return nil, err
		}
		lower := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, reg.id), uint16(r.First))
		upper := binary.BigEndian.AppendUint32(nil, uint32(reg.id)<<16+uint32(r.Last)+1)
		it := src.db.NewIterator(lower, upper)
		for it.Next() {
			k := binary.BigEndian.AppendUint16(nil, id)
			batch.Put(append(k, it.Key()[2:]...), it.Value())
			if batch.Size() >= 1<<20 {
				if err := flush(); err != nil {
					it.Close()
					return nil, err
				}
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	meta, err := src.db.Get(metaKey)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("the checkpoint's meta: %w", err)
	}
	return meta, nil
}
