// Package state is keyed state for stream processors, on kv: what an
// operator of a streaming engine keeps per key (a running aggregate, the
// open windows of a key, the bids of an auction), read and written a
// mini-batch of events at a time.
//
// # The model
//
// As in Flink and Kafka Streams: a Backend holds the state of one subtask;
// named states of four kinds — Value, Map (user key → value), List
// (append), Reducing (a running reduction) — each scoped to a key and a
// namespace (a window, or nothing). Keys fall into key groups,
// KeyGroup(key) = FNV-1a(key) mod MaxKeyGroups, the unit by which state is
// redistributed when the parallelism changes.
//
// # The mini-batch
//
// An operator hands a batch of events to a MiniBatch in two phases:
//
//	for each event: vs.Want(mb, key, ns)          // declare the reads
//	mb.Load()                                      // ONE kv.MultiGet of every distinct key wanted
//	for each event: v, ok, _ := vs.Get(mb, key, ns); vs.Put(mb, key, ns, v2)
//	mb.Commit()                                    // ONE kv.Batch with every write
//
// Load reads each distinct (state, key, namespace[, user key]) once, however
// many events want it (hot keys: Stats.Deduped), and what the batch wrote
// is read back from the batch (Stats.CacheHits); a key written after it was
// wanted and before the Load keeps the write. A Get of something not
// wanted and not written falls back to one kv.Get (Stats.Unplanned): a
// correct but slow path the operator should avoid (with StrictReads it is
// ErrNotWanted, as is a Get of a key wanted and not loaded yet). Values
// returned by Get are valid until the batch's Commit or Reset.
//
// A stream processor that knows its next batch's keys while it works on the
// current one can declare them in a second MiniBatch and call its ReadAhead:
// the blocks load while the current batch is processed, and that batch's
// Load later reads as of its own call (so the current batch's writes are
// seen, and a key's records keep their order).
//
// # Key layout in kv
//
//	+----------+-----------+-------------+-----+------------+----+----------+
//	| state id | key group | len(key)    | key | len(ns)    | ns | user key |
//	| 2 B, BE  | 2 B, BE   | uvarint     |     | uvarint    |    | (Map)    |
//	+----------+-----------+-------------+-----+------------+----+----------+
//
// The state id first keeps each state's entries together; the key group
// next keeps a key group's entries in one range (a rescale moves ranges);
// the lengths make every prefix unambiguous, so a Map's entries under
// (key, ns) are exactly the keys with that prefix. A timer (TimerService)
// is an entry of its service's id whose user key is its time (8 bytes,
// big endian, sign bit flipped) and whose payload is empty. State id
// 0xFFFF holds the backend's own records: the registry of state names
// (name → id, kind and TTL, kept so a restored backend maps names as
// before and refuses a name registered again as another kind or with
// another TTL: ErrIncompatible), the number of key groups (opening state
// with another is ErrIncompatible), and the last checkpoint's metadata.
//
// # Typed states
//
// NewValue and NewList give states of a Go type with a Codec. Their Want
// returns a Lookup — the stored key, encoded and placed in its key group
// once — that Get, Put and Clear of the same batch take, so an operator
// encodes and hashes a key once per event.
//
// # Values
//
//	+-----------------------------+---------+
//	| expires at: 8 B, BE, unix ns | payload |   0: never
//	+-----------------------------+---------+
//
// A List's payload is its items, each uvarint length + bytes; a Reducing
// state's is the reduced value. A state registered with a TTL stamps each
// write with now + TTL; a read of an expired entry finds nothing and
// deletes the entry in the batch's Commit, so expired state (fired windows,
// closed auctions) leaves the disk as it is met; Clear removes it at once.
//
// # Durability and checkpoints
//
// The backend's kv store runs without a log (kv.Options.DisableWAL): state
// is durable at a checkpoint, as in Flink. Checkpoint(dir, meta) flushes
// the store, hard-links its tables into a hidden directory beside dir (a
// table unchanged since the last checkpoint is the same file: checkpoints
// are incremental), records meta — the operator's input position — with
// them, and renames the directory to dir when it is whole and synced: a
// checkpoint is complete or absent (IsCheckpoint). After a crash the
// operator calls Restore with its last checkpoint and replays its input
// from the position meta holds: the state it then builds is exactly the
// state it had. RestoreKeyGroups builds the state of a range of key groups
// from the checkpoints of the subtasks that held them at another
// parallelism (RangeForSubtask gives Flink's assignment), copying their
// entries, timers included. Writes after the last checkpoint are lost in a
// crash by design, without an error.
//
// # Errors
//
// Every call after Close returns ErrClosed; Put and Clear return errors
// as the other writes do. With Options.StrictReads a Get of an entry its
// batch did not want (nor wrote) is ErrNotWanted instead of a kv.Get of
// its own. Stored bytes that fail their layout are corruption
// (ringstore.IsCorrupt): a key or timer is ErrBadKey, a value a codec
// cannot decode is the codec's error marked as corruption (ErrBadValue from
// the codecs here), and a damaged value header, list or registry record is
// a *ringstore.CorruptError (naming the directory for the registry).
//
// # Concurrency
//
// A Backend is safe for concurrent use; a MiniBatch and the states' methods
// on it belong to one goroutine at a time, as does a TimerService (its
// heap is in memory, changed with the batches that write its entries).
package state
