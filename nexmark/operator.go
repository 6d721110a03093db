package nexmark

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ringstore/ringstore/state"
)

// Lookups are the state lookups one event's (or timer's) Want made, in
// the order it made them, for its Process (or OnTimer): each key is
// encoded and placed in its key group once.
type Lookups [8]state.Lookup

// Operator is a query's first stage on one worker's state, a mini-batch
// at a time: Want declares the reads event e makes under partition key
// key, in l; after the batch's one Load, Process runs the event with them.
// Every state key an operator uses is its 8-byte partition key (pk) with
// the rest in the namespace, so the key group is the partition key's.
type Operator interface {
	Want(e Event, key int64, mb *state.MiniBatch, l *Lookups)
	Process(e Event, key int64, mb *state.MiniBatch, l *Lookups, out *Out) error
}

// TimerOperator is an Operator with event-time timers: its timer service
// fires a timer once the watermark reaches it, in rounds: TimerWant for
// each due timer, one Load, OnTimer for each, one Commit.
type TimerOperator interface {
	Operator
	Timers() *state.TimerService
	TimerWant(t state.Timer, mb *state.MiniBatch, l *Lookups)
	OnTimer(t state.Timer, mb *state.MiniBatch, l *Lookups, out *Out) error
}

// pk is the state key of partition key k: its 8 bytes, big endian.
func pk(k int64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(k)) }

// pkOf reads a partition key back from a state key.
func pkOf(key []byte) int64 { return int64(binary.BigEndian.Uint64(key)) }

// opState opens an operator's states on a worker's backend, keeping the
// first error: open every state, then check err once.
type opState struct {
	b     *state.Backend
	query string
	err   error
}

func (o *opState) keep(err error) {
	if o.err == nil && err != nil {
		o.err = fmt.Errorf("nexmark: %s: %w", o.query, err)
	}
}

func openValue[T any](o *opState, name string, c state.Codec[T]) *state.Value[T] {
	v, err := state.NewValue(o.b, o.query+"/"+name, 0, c)
	o.keep(err)
	return v
}

func openList[T any](o *opState, name string, c state.Codec[T]) *state.List[T] {
	v, err := state.NewList(o.b, o.query+"/"+name, 0, c)
	o.keep(err)
	return v
}

func (o *opState) timers() *state.TimerService {
	t, err := o.b.Timers(o.query + "/timers")
	o.keep(err)
	return t
}

// stateless is an Operator without state: a query of bids whose emit
// writes the bid's row into r and says whether the bid has one.
type stateless func(b *Bid, r *row) bool

func (stateless) Want(Event, int64, *state.MiniBatch, *Lookups) {}

func (f stateless) Process(e Event, _ int64, _ *state.MiniBatch, _ *Lookups, out *Out) error {
	r := out.row()
	if f(e.Bid, &r) {
		out.emitRow(&r)
	}
	return nil
}

// statelessQuery is a query of bids with no state.
func statelessQuery(name string, emit func(b *Bid, r *row) bool) Query {
	return Query{Name: name, Keys: oneKey(bidKey), Open: func(*state.Backend) (Operator, error) { return stateless(emit), nil }}
}

// wantBatch declares the reads of a mini-batch of events: each event's
// Want, in order, its Lookups in ls.
func wantBatch(op Operator, mb *state.MiniBatch, ls []Lookups, events []keyedEvent) {
	for i, e := range events {
		op.Want(e.Event, e.key, mb, &ls[i])
	}
}

// loadWanted makes the one Load of a mini-batch whose reads wantBatch
// declared; load times it.
func loadWanted(mb *state.MiniBatch, load *time.Duration) error {
	if mb == nil {
		return nil
	}
	t := time.Now()
	err := mb.Load()
	*load += time.Since(t)
	return err
}

// processLoaded runs the events of a loaded mini-batch, then its one
// Commit.
func processLoaded(op Operator, name string, mb *state.MiniBatch, ls []Lookups, events []keyedEvent, out *Out) error {
	for i, e := range events {
		if err := op.Process(e.Event, e.key, mb, &ls[i], out); err != nil {
			return fmt.Errorf("nexmark: %s, event %d: %w", name, e.ID, err)
		}
	}
	if mb != nil {
		return mb.Commit()
	}
	return nil
}

// fireTimers fires op's timers due at watermark wm, in rounds.
func fireTimers(op TimerOperator, name string, mb *state.MiniBatch, ls *[]Lookups, wm int64, out *Out, load *time.Duration) error {
	for {
		due, err := op.Timers().Due(wm)
		if err != nil || len(due) == 0 {
			return err
		}
		if len(*ls) < len(due) {
			*ls = make([]Lookups, len(due))
		}
		l := (*ls)[:len(due)]
		for i, t := range due {
			op.TimerWant(t, mb, &l[i])
		}
		start := time.Now()
		err = mb.Load()
		*load += time.Since(start)
		if err != nil {
			return err
		}
		for i, t := range due {
			if err := op.OnTimer(t, mb, &l[i], out); err != nil {
				return fmt.Errorf("nexmark: %s, timer at %d: %w", name, t.TS, err)
			}
		}
		if err := mb.Commit(); err != nil {
			return err
		}
	}
}
