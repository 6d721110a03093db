package nexmark

import (
	"encoding/binary"

	"github.com/ringstore/ringstore/state"
)

// The queries over windows, with timers: q5 (hopping, with a final
// stage), q7, q8 and q12 (tumbling), q11 (sessions). Windows are aligned
// to the epoch, [start, end); each emits once, when the watermark passes
// it. A window's state and timer are under its partition key, with the
// window's end as the namespace (q7: the end is the key).

const (
	tumble  = 10_000 // q7, q8, q12: tumbling windows of 10 s
	hopSize = 10_000 // q5: windows of 10 s every 2 s
	hopStep = 2_000
	gap     = 10_000 // q11: a session ends 10 s after its last bid
)

// tumbleEnd is the end (exclusive) of the tumbling window of size that
// holds ts.
func tumbleEnd(ts, size int64) int64 { return (ts/size + 1) * size }

// hopEnds yields the ends of q5's windows that hold ts, earliest first.
func hopEnds(ts int64) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		first := (ts/hopStep)*hopStep + hopStep // the first window end after ts
		for end := first; end-hopSize <= ts; end += hopStep {
			if !yield(end) {
				return
			}
		}
	}
}

// windowCount is a count per (partition key, window end) with the timer
// that closes the window: q5's per auction, q12's per bidder.
type windowCount struct {
	count  *state.Value[int64]
	timers *state.TimerService
}

func openWindowCount(b *state.Backend, query string) (windowCount, error) {
	o := &opState{b: b, query: query}
	w := windowCount{count: openValue(o, "count", state.Int64Codec), timers: o.timers()}
	return w, o.err
}

func (w windowCount) Timers() *state.TimerService { return w.timers }

// add adds one to the count of l (key's window ending at end) and sets
// the timer that closes the window.
func (w windowCount) add(mb *state.MiniBatch, l state.Lookup, key []byte, end int64) error {
	n, _, err := w.count.Get(mb, l)
	if err != nil {
		return err
	}
	if err := w.count.Put(mb, l, n+1); err != nil {
		return err
	}
	return w.timers.Set(end-1, key, i64(end))
}

func (w windowCount) TimerWant(t state.Timer, mb *state.MiniBatch, l *Lookups) {
	l[0] = w.count.Want(mb, t.Key, t.NS)
}

// take returns the count of a closed window and clears it.
func (w windowCount) take(mb *state.MiniBatch, l *Lookups) (int64, bool, error) {
	n, ok, err := w.count.Get(mb, l[0])
	if err != nil || !ok {
		return 0, false, err
	}
	return n, true, w.count.Clear(mb, l[0])
}

// q5Op counts an auction's bids per window and forwards the count when
// the window closes. Lookups: one per window of the bid.
type q5Op struct{ windowCount }

func (o q5Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	i, k := 0, pk(e.Bid.Auction)
	for end := range hopEnds(e.Bid.DateTime) {
		l[i] = o.count.Want(mb, k, i64(end))
		i++
	}
}

func (o q5Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, _ *Out) error {
	i, k := 0, pk(e.Bid.Auction)
	for end := range hopEnds(e.Bid.DateTime) {
		if err := o.add(mb, l[i], k, end); err != nil {
			return err
		}
		i++
	}
	return nil
}

func (o q5Op) OnTimer(t state.Timer, mb *state.MiniBatch, l *Lookups, out *Out) error {
	n, ok, err := o.take(mb, l)
	if err != nil || !ok {
		return err
	}
	out.Forward(t.TS, append(t.Key[:8:8], i64(n)...)) // auction, count
	return nil
}

// q12Op counts a bidder's bids per tumbling window of processing time.
type q12Op struct{ windowCount }

func (o q12Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.count.Want(mb, pk(e.Bid.Bidder), i64(tumbleEnd(ingestTime(e), tumble)))
}

func (o q12Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, _ *Out) error {
	return o.add(mb, l[0], pk(e.Bid.Bidder), tumbleEnd(ingestTime(e), tumble))
}

func (o q12Op) OnTimer(t state.Timer, mb *state.MiniBatch, l *Lookups, out *Out) error {
	n, ok, err := o.take(mb, l)
	if err != nil || !ok {
		return err
	}
	r := out.row()
	out.emitRow(r.int(pkOf(t.Key)).int(n).int(t.TS + 1 - tumble).int(t.TS + 1))
	return nil
}

// q7Op keeps per window (its end the key) the highest price and the bids
// at it.
type q7Op struct {
	max    *state.Value[int64]
	bids   *state.List[[]byte]
	timers *state.TimerService
}

func (o q7Op) Timers() *state.TimerService { return o.timers }

// Lookups: 0 max, 1 bids.
func (o q7Op) Want(_ Event, end int64, mb *state.MiniBatch, l *Lookups) {
	k := pk(end)
	l[0], l[1] = o.max.Want(mb, k, nil), o.bids.Want(mb, k, nil)
}

func (o q7Op) Process(e Event, end int64, mb *state.MiniBatch, l *Lookups, _ *Out) error {
	b := e.Bid
	m, ok, err := o.max.Get(mb, l[0])
	if err != nil {
		return err
	}
	var r row
	r.int(b.Auction).int(b.Price).int(b.Bidder).int(b.DateTime).str(b.Extra)
	if b.DateTime == end { // a candidate of the window it closes
		if ok && m == b.Price {
			return o.bids.Add(mb, l[1], r.b)
		}
		return nil
	}
	switch {
	case !ok || m < b.Price:
		if err := o.max.Put(mb, l[0], b.Price); err != nil {
			return err
		}
		if err := o.bids.Clear(mb, l[1]); err != nil {
			return err
		}
		if err := o.timers.Set(end, pk(end), nil); err != nil {
			return err
		}
	case m > b.Price:
		return nil
	}
	return o.bids.Add(mb, l[1], r.b)
}

func (o q7Op) TimerWant(t state.Timer, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.bids.Want(mb, t.Key, t.NS)
}

func (o q7Op) OnTimer(t state.Timer, mb *state.MiniBatch, l *Lookups, out *Out) error {
	bids, err := o.bids.Get(mb, l[0])
	if err != nil {
		return err
	}
	for _, b := range bids {
		out.emitRow(&row{b: b})
	}
	if err := o.bids.Clear(mb, l[0]); err != nil {
		return err
	}
	return o.max.Clear(mb, o.max.At(t.Key, t.NS))
}

// q8Op keeps, per person and window, the person's name and whether they
// sold; the window's timer joins them.
type q8Op struct {
	person, seller *state.Value[[]byte]
	timers         *state.TimerService
}

func (o q8Op) Timers() *state.TimerService { return o.timers }

func (q8Op) Want(Event, int64, *state.MiniBatch, *Lookups) {}

func (o q8Op) Process(e Event, _ int64, mb *state.MiniBatch, _ *Lookups, _ *Out) error {
	end := tumbleEnd(e.Time(), tumble)
	var err error
	if e.Kind == KindPerson {
		k := pk(e.Person.ID)
		err = o.person.Put(mb, o.person.At(k, i64(end)), []byte(e.Person.Name))
		if err == nil {
			err = o.timers.Set(end-1, k, i64(end))
		}
	} else {
		k := pk(e.Auction.Seller)
		err = o.seller.Put(mb, o.seller.At(k, i64(end)), []byte{1})
		if err == nil {
			err = o.timers.Set(end-1, k, i64(end))
		}
	}
	return err
}

// TimerWant's lookups: 0 person, 1 seller.
func (o q8Op) TimerWant(t state.Timer, mb *state.MiniBatch, l *Lookups) {
	l[0], l[1] = o.person.Want(mb, t.Key, t.NS), o.seller.Want(mb, t.Key, t.NS)
}

func (o q8Op) OnTimer(t state.Timer, mb *state.MiniBatch, l *Lookups, out *Out) error {
	name, isPerson, err := o.person.Get(mb, l[0])
	if err != nil {
		return err
	}
	_, isSeller, err := o.seller.Get(mb, l[1])
	if err != nil {
		return err
	}
	if isPerson && isSeller {
		r := out.row()
		out.emitRow(r.int(pkOf(t.Key)).str(string(name)).int(t.TS + 1 - tumble))
	}
	if err := o.person.Clear(mb, l[0]); err != nil {
		return err
	}
	return o.seller.Clear(mb, l[1])
}

// q11Op keeps a bidder's open session: start, last bid, bids.
type q11Op struct {
	session *state.Value[[]byte]
	timers  *state.TimerService
}

func (o q11Op) Timers() *state.TimerService { return o.timers }

func (o q11Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.session.Want(mb, pk(e.Bid.Bidder), nil)
}

func (o q11Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	b := e.Bid
	k := pk(b.Bidder)
	v, ok, err := o.session.Get(mb, l[0])
	if err != nil {
		return err
	}
	sess := []int64{b.DateTime, b.DateTime, 0} // start, last bid, bids
	if ok {
		old, err := fromU64s(v, 3, "session")
		if err != nil {
			return err
		}
		if err := o.timers.Delete(old[1]+gap-1, k, nil); err != nil {
			return err
		}
		if b.DateTime <= old[1]+gap {
			sess = []int64{old[0], max(old[1], b.DateTime), old[2]}
		} else {
			emitSession(out, b.Bidder, old)
		}
	}
	sess[2]++
	if err := o.session.Put(mb, l[0], u64s(sess...)); err != nil {
		return err
	}
	return o.timers.Set(sess[1]+gap-1, k, nil)
}

func (o q11Op) TimerWant(t state.Timer, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.session.Want(mb, t.Key, t.NS)
}

func (o q11Op) OnTimer(t state.Timer, mb *state.MiniBatch, l *Lookups, out *Out) error {
	v, ok, err := o.session.Get(mb, l[0])
	if err != nil || !ok {
		return err
	}
	sess, err := fromU64s(v, 3, "session")
	if err != nil {
		return err
	}
	if sess[1]+gap-1 != t.TS {
		return nil // a later bid moved the session's end
	}
	emitSession(out, pkOf(t.Key), sess)
	return o.session.Clear(mb, l[0])
}

func emitSession(out *Out, bidder int64, sess []int64) {
	r := out.row()
	out.emitRow(r.int(bidder).int(sess[2]).int(sess[0]).int(sess[1] + gap))
}

// ingestTime is when the source took the event in, on its clock.
func ingestTime(e Event) int64 { return e.Time() }

// q5: hot items: in each window of 10 s (every 2 s), the auctions with
// the most bids, SELECT auction, num. The first stage (by auction) counts
// an auction's bids per window and forwards the count when the window
// closes; the final stage keeps each window's highest count and its
// auctions and emits them once every worker has passed the window.
func q5() Query {
	return Query{Name: "q5", Stateful: true, Keys: oneKey(bidKey),
		Open: func(b *state.Backend) (Operator, error) {
			w, err := openWindowCount(b, "q5")
			return q5Op{w}, err
		},
		Final: &FinalOperator{
			Process: func(r Record, s *memState, out *Out) error {
				f, err := fromU64s(r.Data, 2, "q5 record")
				if err != nil {
					return err
				}
				w := i64(r.TS)
				v, ok := s.get("window", w) // the highest count, then its auctions
				switch {
				case !ok || int64(binary.BigEndian.Uint64(v)) < f[1]:
					s.put("window", w, u64s(f[1], f[0]))
				case int64(binary.BigEndian.Uint64(v)) == f[1]:
					s.put("window", w, append(v, i64(f[0])...))
				}
				s.Timer(r.TS, w)
				return nil
			},
			OnTimer: func(ts int64, key []byte, s *memState, out *Out) error {
				v, ok := s.get("window", key)
				if !ok {
					return nil
				}
				s.delete("window", key)
				f, err := fromU64s(v, len(v)/8, "q5 window")
				if err != nil {
					return err
				}
				for _, a := range f[1:] {
					r := out.row()
					out.emitRow(r.int(a).int(f[0]))
				}
				return nil
			}},
	}
}

// q7: the highest bids of each tumbling window of 10 s: SELECT
// B.auction, B.price, B.bidder, B.dateTime, B.extra of every bid whose
// price is the highest of a window and whose dateTime is BETWEEN the
// window's end - 10 s AND its end — both ends included, so a bid at
// exactly a window's end is also a candidate of the window it closes
// (without counting for its maximum). The window's end is the key (as the
// SQL's GROUP BY window): a window's bids go to one worker, and a bid at a
// window's end goes to that window's worker too. Emitted when the
// watermark reaches the window's end.
func q7() Query {
	return Query{Name: "q7", Stateful: true,
		Keys: func(e Event, dst []int64) []int64 {
			if e.Kind != KindBid {
				return dst
			}
			dst = append(dst, tumbleEnd(e.Bid.DateTime, tumble))
			if e.Bid.DateTime%tumble == 0 {
				dst = append(dst, e.Bid.DateTime)
			}
			return dst
		},
		Open: func(b *state.Backend) (Operator, error) {
			o := &opState{b: b, query: "q7"}
			op := q7Op{max: openValue(o, "max", state.Int64Codec), bids: openList(o, "bids", state.BytesCodec), timers: o.timers()}
			return op, o.err
		}}
}

// q8: new users: SELECT P.id, P.name, P.starttime of the people who
// opened an auction in the tumbling window of 10 s in which they
// registered, emitted when the window closes.
func q8() Query {
	return Query{Name: "q8", Stateful: true, Keys: oneKey(personOrSeller),
		Open: func(b *state.Backend) (Operator, error) {
			o := &opState{b: b, query: "q8"}
			op := q8Op{person: openValue(o, "person", state.BytesCodec), seller: openValue(o, "seller", state.BytesCodec), timers: o.timers()}
			return op, o.err
		}}
}

// q11: user sessions: per bidder, SELECT bidder, count(*),
// SESSION_START, SESSION_END with a gap of 10 s. As Flink merges session
// windows ([t, t + 10 s) per bid, merged where they overlap or touch), a
// bid at most 10 s after the session's last continues it; the session
// ends 10 s after its last bid and is emitted when the watermark passes
// that, or when a later bid starts the next.
func q11() Query {
	return Query{Name: "q11", Stateful: true, Keys: oneKey(bidderKey),
		Open: func(b *state.Backend) (Operator, error) {
			o := &opState{b: b, query: "q11"}
			op := q11Op{session: openValue(o, "session", state.BytesCodec), timers: o.timers()}
			return op, o.err
		}}
}

// q12: SELECT bidder, count(*), window_start, window_end per bidder in
// tumbling windows of 10 s of processing time (PROCTIME()). The runner's
// processing time is the source's ingestion clock, which advances with
// the event id at the generator's rate, so the output can be checked: on
// this generator it equals event time.
func q12() Query {
	return Query{Name: "q12", Stateful: true, Keys: oneKey(bidderKey),
		Open: func(b *state.Backend) (Operator, error) {
			w, err := openWindowCount(b, "q12")
			return q12Op{w}, err
		}}
}
