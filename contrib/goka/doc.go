// Package gokastore is a goka (github.com/lovoo/goka) storage on ringstore's
// kv store: a storage.Storage per partition and a storage.Builder that gives
// the partitions of one processor instance ONE shared kv store — one block
// cache, one io_uring engine, one set of memtables — so the instance's
// memory is bounded by the cache, the memtables and the budget of the
// tables' metadata (kv.Options.TableMetaCacheSize), not by a LevelDB per
// partition. It lives in a module of its own (contrib/goka) so that users of
// ringstore never pull Kafka clients.
//
//	p, err := goka.NewProcessor(brokers, graph,
//		goka.WithStorageBuilder(gokastore.Builder("/var/lib/app/state", gokastore.Options{})))
//
// Builder opens the store with the first partition built and closes it with
// the last one closed (partitions hold references). Open, Store.Builder and
// Store.Close do the same with the store's lifetime in the caller's hands
// (and Store.DB().Stats() at hand). Views and lookup tables built with the
// same Builder share the store too: every partition has a key range of its
// own.
//
// # Key layout
//
// One kv store per processor instance; every record of a partition starts
// with the partition's prefix:
//
//	prefix  = 't' | topicLen u16 BE | topic bytes | partition u32 BE
//
//	prefix | 0x00          → offset record: int64 BE, the changelog offset the
//	                         partition's values cover (goka's "__offset")
//	prefix | 0x01 | key    → the value of key (goka's table value, as is)
//
//	 't' 00 05 'o' 'r' 'd' 'e' 'r' 00 00 00 03 00            offset of orders/3
//	 't' 00 05 'o' 'r' 'd' 'e' 'r' 00 00 00 03 01 'k' '1'    orders/3, key "k1"
//
// The topic's length comes first, so no partition's prefix is a prefix of
// another's; the offset record sorts before the partition's values, so a scan
// of [prefix|0x01, prefix|0x02) sees values only, and a user key "__offset"
// is an ordinary key. Iterator and IteratorWithRange strip the prefix; an
// empty limit means "every key starting with start", as in goka's LevelDB
// storage.
//
// # Durability and crashes
//
// The changelog topic is the log: the store runs with kv's DisableWAL, so a
// Set is applied to the memtable and acknowledged at once, and is durable once
// a flush has put it in a table. A flush persists a prefix of the commit
// order (tables, then the manifest, fsynced). The offset record is written in
// the same commit order, always after the values it covers: goka calls
// SetOffset(o) after the Set of o's value has returned (recovery:
// PartitionTable.storeEvent; processing: the producer's callback after the
// changelog write), and the record is written from that in-memory offset
// later. So on disk the offset is never ahead of the values it covers; values
// may be ahead of it, which a replay overwrites with the same changelog
// records.
//
//   - Restore (before MarkRecovered): Sets go to the memtable without a log.
//     Every RecoveryOffsetEvery SetOffset calls (1024) the offset record is
//     written, so the memtable flushes that a large restore makes (a full
//     memtable) carry recent progress. MarkRecovered writes the offset record
//     and flushes: the restored partition is durable when it returns. After
//     a restore of at least a memtable's bytes it also merges the L0 tables
//     the restore left into the levels below before it returns (unless
//     Options.NoCompactionWait), so processing does not start behind those
//     compactions; a crash meanwhile costs nothing, the data being durable.
//   - Processing (after MarkRecovered): SetOffset asks a background flusher
//     for a flush; it runs at most once per FlushInterval (1s): it writes the
//     offset record of every open partition, then flushes the memtable.
//   - Close of a partition writes its offset record and flushes.
//
// What a crash (SIGKILL, power loss) costs: the writes after the last flush
// — at most FlushInterval of processing, or the restore since the last full
// memtable — and nothing else. On restart GetOffset returns the offset on
// disk and goka replays the changelog from the next offset, overwriting the
// newer values that survived with the same records. A crash never leaves a
// wrong value under a stored offset. goka delivers input at least once
// either way: input after the last committed consumer offset is processed
// again.
//
// # Concurrency
//
// Every method is safe for concurrent use, and goka's pattern — any number of
// readers, one writer per partition, SetOffset from the producer's callback
// goroutine — is what the store is built for. The shared kv store
// serializes nothing between partitions but its commit pipeline. A Get is
// one kv read: the block reads of the Gets of many partition goroutines go
// to the store's one non-Inline ioengine, whose ring goroutine gathers the
// requests of concurrent callers into one io_uring_enter, so cold reads of N
// partitions overlap without N threads blocked in pread (with
// RINGSTORE_IO_URING=false, or where io_uring is refused, each is a pread).
// Iterators read a snapshot, are owned by one goroutine and must be released
// before the partition's last Close (kv refuses to close under open
// iterators). A partition may be open once per store at a time.
package gokastore
