package wal_test

// These tests run the log on an engine with a FaultPlan, which injects
// failures at the submission boundary of the real backends (io_uring and
// system calls): short writes, -EAGAIN, EIO, ENOSPC and torn writes. They
// check the durability rules of DESIGN.md through the public API only:
//
//   - a failed write or fdatasync turns the log read-only for good, and it
//     never retries an fdatasync;
//   - what was acknowledged before stays readable, and is there after a
//     reopen without faults, which accepts appends again;
//   - a torn write is cut at the reopen;
//   - short transfers and -EAGAIN are finished by the engine: every append
//     succeeds.
//
// The sequential cases aim a fault at one request by counting: with
// faultPayloadSize-byte payloads a 64 KiB segment holds faultPerSegment
// entries, and a single appender makes the writes and fdatasyncs in a fixed
// order (see opHeader, opGroup and opSeal).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal"
)

var faultModes = []struct {
	name string
	mode ioengine.IOMode
}{{"uring", ioengine.URing}, {"syscall", ioengine.Syscall}}

const (
	faultSegmentSize = 64 << 10
	faultPayloadSize = 8000
	// (64 KiB - header - trailer) / (16 + 8000) = 8 entries per segment.
	faultPerSegment = (faultSegmentSize - wal.SegmentHeaderSize - wal.TrailerSize) / (wal.EntryHeaderSize + faultPayloadSize)
	// A single appender makes, per segment k (from 0): the header write +
	// fdatasync, one write + fdatasync per entry, the trailer write +
	// fdatasync (the seal, before segment k+1's header).
	faultOpsPerSegment = faultPerSegment + 2
)

// opHeader is the ordinal (from 0) among writes, and among fdatasyncs, of
// the request writing segment k's header, for a single appender of
// faultPayloadSize-byte entries. Fault.After = ordinal aims at it.
func opHeader(k int) int { return k * faultOpsPerSegment }

// opGroup is the ordinal of the request writing (and flushing) entry seq.
func opGroup(seq uint64) int {
	k, j := int(seq-1)/faultPerSegment, int(seq-1)%faultPerSegment
	return k*faultOpsPerSegment + 1 + j
}

// opSeal is the ordinal of the request writing segment k's trailer.
func opSeal(k int) int { return k*faultOpsPerSegment + faultPerSegment + 1 }

// seqPayload is the payload the sequential tests append as entry seq.
func seqPayload(seq uint64, n int) []byte {
	b := make([]byte, n)
	x := seq*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// idPayload is the payload writer w appends as its i-th entry (in the given
// cycle of a crash test): it starts with the three numbers and a checksum of
// the whole payload, so any entry read back can be checked on its own, and
// its length and bytes follow from the numbers.
func idPayload(cycle, w, i uint64) []byte {
	n := 32 + int((w*131+i*17+cycle*7)%1500)
	b := make([]byte, n)
	binary.LittleEndian.PutUint64(b[0:], cycle)
	binary.LittleEndian.PutUint64(b[8:], w)
	binary.LittleEndian.PutUint64(b[16:], i)
	x := (cycle<<40 ^ w<<20 ^ i) | 1
	for j := 32; j < n; j++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
	binary.LittleEndian.PutUint64(b[24:], crc64.Checksum(b[32:], crcTable))
	return b
}

var crcTable = crc64.MakeTable(crc64.ECMA)

// payloadID decodes and checks a payload made by idPayload.
func payloadID(p []byte) (cycle, w, i uint64, err error) {
	if len(p) < 32 {
		return 0, 0, 0, fmt.Errorf("payload of %d bytes, too short", len(p))
	}
	cycle, w, i = binary.LittleEndian.Uint64(p[0:]), binary.LittleEndian.Uint64(p[8:]), binary.LittleEndian.Uint64(p[16:])
	if cycle > 1<<20 || w > 1<<20 || i > 1<<40 {
		return 0, 0, 0, fmt.Errorf("payload names cycle %d writer %d counter %d: not one this test makes", cycle, w, i)
	}
	if want := idPayload(cycle, w, i); !bytes.Equal(p, want) {
		return 0, 0, 0, fmt.Errorf("payload of %d bytes names cycle %d writer %d counter %d, whose payload is %d bytes and differs", len(p), cycle, w, i, len(want))
	}
	return cycle, w, i, nil
}

// faultEngine returns an engine on mode with a plan of faults, closed at
// cleanup.
func faultEngine(t *testing.T, mode ioengine.IOMode, faults ...ioengine.Fault) (*ioengine.Engine, *ioengine.FaultPlan) {
	t.Helper()
	plan := ioengine.NewFaultPlan(faults...)
	e, err := ioengine.New(ioengine.Options{Mode: mode, Faults: plan, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if mode == ioengine.URing && e.Backend() != ioengine.BackendURing {
		t.Logf("io_uring is not available here, the uring case runs on %s: %s", e.Backend(), e.FallbackReason())
	}
	return e, plan
}

func faultOpen(t *testing.T, dir string, opts wal.Options) *wal.Log {
	t.Helper()
	if opts.SegmentSize == 0 {
		opts.SegmentSize = faultSegmentSize
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	// The faults are aimed by counting the engine's requests in order, so
	// the zeroFillSegments hook stays off: its job goroutine would add
	// writes and an fdatasync of its own, at times of its own, to that
	// count. And
	// every durable write is a write and a linked fdatasync, so that a
	// fault can be aimed at either (RWF_DSYNC writes, the io_uring default,
	// get their faults as writes: TestFaultDSync).
	wal.SetLinkedFdatasync(&opts)
	l, err := wal.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// checkSeqEntries checks that l holds exactly 1..last with seqPayload.
func checkSeqEntries(t *testing.T, l *wal.Log, last uint64) {
	t.Helper()
	if l.FirstSeq() != 1 || l.LastSeq() != last {
		t.Fatalf("log holds %d..%d, want 1..%d", l.FirstSeq(), l.LastSeq(), last)
	}
	for seq := uint64(1); seq <= last; seq++ {
		got, err := l.ReadAt(seq)
		if err != nil {
			t.Fatalf("ReadAt(%d): %v", seq, err)
		}
		if !bytes.Equal(got, seqPayload(seq, faultPayloadSize)) {
			t.Fatalf("ReadAt(%d): %d bytes, not the payload appended", seq, len(got))
		}
	}
	if _, err := l.ReadAt(last + 1); !errors.Is(err, wal.ErrNotFound) {
		t.Fatalf("ReadAt(%d) past the end: %v, want ErrNotFound", last+1, err)
	}
}

// checkVerify runs wal.Verify and checks that it finds no damage, no torn
// tail (unless torn) and the range first..last.
func checkVerify(t *testing.T, dir string, first, last uint64, torn bool) wal.VerifyReport {
	t.Helper()
	rep, err := wal.Verify(dir)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.FirstSeq != first || rep.LastSeq != last {
		t.Fatalf("Verify says the log holds %d..%d, want %d..%d", rep.FirstSeq, rep.LastSeq, first, last)
	}
	var tornBytes int64
	for _, s := range rep.Segments {
		tornBytes += s.TornTail
	}
	if torn != (tornBytes > 0) {
		t.Fatalf("Verify: %d torn bytes in the last segment, want torn tail %v (%+v)", tornBytes, torn, rep.Segments)
	}
	return rep
}

// seqFaultCase is one fault aimed at a single appender.
type seqFaultCase struct {
	name   string
	faults []ioengine.Fault
	n      uint64 // appends to try

	// failAt is the seq of the append that must fail (0: none may); every
	// later append must fail with ErrReadOnly, unless retryable.
	failAt    uint64
	errno     unix.Errno // the failing append's error wraps it
	retryable bool       // the failure is not permanent: the next append succeeds
	// lastMin..lastMax is what the failed append may leave in the log: the
	// range of LastSeq after a reopen without faults, whose entries all
	// hold their payloads.
	lastMin, lastMax uint64
	tornTail         bool // the reopen cuts a torn tail
}

func TestFaultSequential(t *testing.T) {
	eio, enospc := unix.EIO, unix.ENOSPC
	fdatasync := func(kind ioengine.FaultKind, after int) []ioengine.Fault {
		return []ioengine.Fault{{Kind: kind, Op: ioengine.OpFdatasync, After: after}}
	}
	write := func(kind ioengine.FaultKind, after int) []ioengine.Fault {
		return []ioengine.Fault{{Kind: kind, Op: ioengine.OpWrite, After: after}}
	}
	const per = faultPerSegment
	cases := []seqFaultCase{
		// A group's fdatasync: the write landed (in the page cache), so a
		// reopen in this process may find the entry; it was never
		// acknowledged, and either way is fine.
		{name: "EIO_on_the_first_group_fdatasync", faults: fdatasync(ioengine.FaultEIO, opGroup(1)),
			n: 4, failAt: 1, errno: eio, lastMin: 0, lastMax: 1},
		{name: "EIO_on_a_group_fdatasync_mid_segment", faults: fdatasync(ioengine.FaultEIO, opGroup(5)),
			n: 10, failAt: 5, errno: eio, lastMin: 4, lastMax: 5},
		{name: "EIO_on_a_group_fdatasync_in_the_third_segment", faults: fdatasync(ioengine.FaultEIO, opGroup(2*per+3)),
			n: 3*per + 2, failAt: 2*per + 3, errno: eio, lastMin: 2*per + 2, lastMax: 2*per + 3},
		{name: "EIO_on_the_fdatasync_of_the_last_entry_of_a_segment", faults: fdatasync(ioengine.FaultEIO, opGroup(per)),
			n: per + 3, failAt: per, errno: eio, lastMin: per - 1, lastMax: per},
		// The seal's fdatasync: the trailer is in the page cache; the
		// reopen finds the segment sealed, and no entry lost.
		{name: "EIO_on_the_fdatasync_of_a_seal", faults: fdatasync(ioengine.FaultEIO, opSeal(0)),
			n: per + 3, failAt: per + 1, errno: eio, lastMin: per, lastMax: per},
		// The new segment's header: DESIGN.md says any fdatasync error
		// turns the log read-only.
		{name: "EIO_on_the_fdatasync_of_the_first_segment_header", faults: fdatasync(ioengine.FaultEIO, opHeader(0)),
			n: 3, failAt: 1, errno: eio, lastMin: 0, lastMax: 0},
		{name: "EIO_on_the_fdatasync_of_a_new_segment_header", faults: fdatasync(ioengine.FaultEIO, opHeader(1)),
			n: per + 3, failAt: per + 1, errno: eio, lastMin: per, lastMax: per},

		// A write that fails without writing anything.
		{name: "EIO_on_the_first_group_write", faults: write(ioengine.FaultEIO, opGroup(1)),
			n: 3, failAt: 1, errno: eio, lastMin: 0, lastMax: 0},
		{name: "EIO_on_a_group_write", faults: write(ioengine.FaultEIO, opGroup(6)),
			n: 10, failAt: 6, errno: eio, lastMin: 5, lastMax: 5},
		{name: "ENOSPC_on_a_group_write", faults: write(ioengine.FaultENOSPC, opGroup(per+4)),
			n: per + 8, failAt: per + 4, errno: enospc, lastMin: per + 3, lastMax: per + 3},
		{name: "ENOSPC_on_the_first_group_write_of_a_segment", faults: write(ioengine.FaultENOSPC, opGroup(per+1)),
			n: per + 4, failAt: per + 1, errno: enospc, lastMin: per, lastMax: per},
		{name: "EIO_on_the_write_of_a_seal", faults: write(ioengine.FaultEIO, opSeal(0)),
			n: per + 3, failAt: per + 1, errno: eio, lastMin: per, lastMax: per},
		// A full disk when a new segment is made is not permanent (log.go:
		// "a failure to create (a full disk) is returned and the next
		// append tries again"): nothing acknowledged is in doubt.
		{name: "ENOSPC_on_the_write_of_a_new_segment_header", faults: write(ioengine.FaultENOSPC, opHeader(1)),
			n: per + 4, failAt: per + 1, errno: enospc, retryable: true, lastMin: per + 3, lastMax: per + 3},

		// Torn writes: part of the group landed, then EIO.
		{name: "torn_group_write_mid_segment", faults: write(ioengine.FaultTorn, opGroup(5)),
			n: 10, failAt: 5, errno: eio, lastMin: 4, lastMax: 4, tornTail: true},
		{name: "torn_group_write_inside_an_entry_header", faults: []ioengine.Fault{{Kind: ioengine.FaultTorn, Op: ioengine.OpWrite, After: opGroup(3), Bytes: 9}},
			n: 6, failAt: 3, errno: eio, lastMin: 2, lastMax: 2, tornTail: true},
		{name: "torn_group_write_of_the_first_entry_of_a_segment", faults: write(ioengine.FaultTorn, opGroup(per+1)),
			n: per + 4, failAt: per + 1, errno: eio, lastMin: per, lastMax: per, tornTail: true},
		{name: "torn_group_write_of_the_first_entry", faults: write(ioengine.FaultTorn, opGroup(1)),
			n: 3, failAt: 1, errno: eio, lastMin: 0, lastMax: 0, tornTail: true},
		{name: "torn_group_write_of_the_last_entry_of_a_segment", faults: write(ioengine.FaultTorn, opGroup(2*per)),
			n: 2*per + 3, failAt: 2 * per, errno: eio, lastMin: 2*per - 1, lastMax: 2*per - 1, tornTail: true},
		// The seal's trailer torn: the last segment's trailer is half
		// written. It was never acknowledged: a torn tail, which recovery
		// cuts without losing the segment's entries or refusing to open.
		{name: "torn_write_of_a_seal", faults: write(ioengine.FaultTorn, opSeal(0)),
			n: per + 3, failAt: per + 1, errno: eio, lastMin: per, lastMax: per, tornTail: true},

		// Finished by the engine: every append succeeds.
		{name: "short_writes_always", faults: []ioengine.Fault{{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, Times: -1}},
			n: 2*per + 3},
		{name: "short_writes_of_one_byte", faults: []ioengine.Fault{{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, Bytes: 1, Times: 200}},
			n: per + 3},
		{name: "short_writes_of_odd_sizes", faults: []ioengine.Fault{
			{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, Bytes: 4095, Times: 30},
			{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, After: 5, Bytes: 17, Times: 30},
			{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, After: 12, Bytes: 7999, Times: -1},
		}, n: 2*per + 3},
		{name: "EAGAIN_on_writes_and_fdatasyncs", faults: []ioengine.Fault{
			{Kind: ioengine.FaultEAGAIN, Op: ioengine.OpWrite, Times: 40},
			{Kind: ioengine.FaultEAGAIN, Op: ioengine.OpFdatasync, After: 3, Times: 40},
		}, n: per + 3},
		{name: "EAGAIN_and_short_writes_on_everything", faults: []ioengine.Fault{
			{Kind: ioengine.FaultEAGAIN, Times: 60},
			{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, Times: -1},
		}, n: 2*per + 3},
	}
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel() // the time goes in fdatasyncs
					runSeqFaultCase(t, m.mode, tc)
				})
			}
		})
	}
}

func runSeqFaultCase(t *testing.T, mode ioengine.IOMode, tc seqFaultCase) {
	dir := t.TempDir()
	eng, plan := faultEngine(t, mode, tc.faults...)
	l := faultOpen(t, dir, wal.Options{Engine: eng, PipelineDepth: 2})
	defer func() {
		if l != nil {
			l.Close()
		}
	}()
	var acked uint64 // seqs 1..acked were acknowledged
	var failed bool
	for i := uint64(1); i <= tc.n; i++ {
		seq, err := l.Append(seqPayload(acked+1, faultPayloadSize))
		switch {
		case err == nil:
			if seq != acked+1 {
				t.Fatalf("append %d: seq %d, want %d", i, seq, acked+1)
			}
			if failed && !tc.retryable {
				t.Fatalf("append %d (seq %d) succeeded after a failure made the log read-only", i, seq)
			}
			acked = seq
		case failed && tc.retryable:
			t.Fatalf("append %d after a retryable failure: %v", i, err)
		case failed:
			if !errors.Is(err, wal.ErrReadOnly) {
				t.Fatalf("append %d after the failure: %v, want ErrReadOnly", i, err)
			}
		default:
			failed = true
			t.Logf("append %d (seq %d) failed: %v", i, acked+1, err)
			if tc.failAt == 0 {
				t.Fatalf("append %d: %v, want every append to succeed (%d faults injected)", i, err, plan.Injected())
			}
			if acked+1 != tc.failAt {
				t.Fatalf("append of seq %d failed (%v), want the append of seq %d to fail", acked+1, err, tc.failAt)
			}
			if !errors.Is(err, tc.errno) {
				t.Fatalf("the failed append's error %v does not wrap %v", err, tc.errno)
			}
			if tc.retryable {
				if errors.Is(err, wal.ErrReadOnly) || l.Err() != nil {
					t.Fatalf("a retryable failure turned the log read-only: %v; Err() = %v", err, l.Err())
				}
				continue
			}
			if !errors.Is(err, wal.ErrReadOnly) {
				t.Fatalf("the failed append's error does not wrap ErrReadOnly; Log.Err() = %v. DESIGN.md: "+
					"\"An fsync/fdatasync error is permanent: the log turns read-only and every later write fails\"", l.Err())
			}
			lerr := l.Err()
			if !errors.Is(lerr, wal.ErrReadOnly) || !errors.Is(lerr, tc.errno) {
				t.Fatalf("Log.Err() = %v, want ErrReadOnly wrapping %v", lerr, tc.errno)
			}
			checkReadOnly(t, l, eng, acked)
		}
	}
	if tc.failAt != 0 && !failed {
		t.Fatalf("all %d appends succeeded, want the append of seq %d to fail (%d faults injected)", tc.n, tc.failAt, plan.Injected())
	}
	if plan.Injected() == 0 {
		t.Fatalf("no fault was injected")
	}
	if tc.failAt == 0 && acked != tc.n {
		t.Fatalf("%d of %d appends acknowledged", acked, tc.n)
	}
	// What was acknowledged is readable on the failed log too.
	for seq := uint64(1); seq <= acked; seq++ {
		got, err := l.ReadAt(seq)
		if err != nil || !bytes.Equal(got, seqPayload(seq, faultPayloadSize)) {
			t.Fatalf("ReadAt(%d) before the reopen: %d bytes, %v; want the payload appended", seq, len(got), err)
		}
	}
	if l.LastSeq() != acked {
		t.Fatalf("LastSeq() = %d, want the last acknowledged %d", l.LastSeq(), acked)
	}
	err := l.Close()
	l = nil
	if failed && !tc.retryable {
		if !errors.Is(err, wal.ErrReadOnly) {
			t.Errorf("Close of a read-only log: %v, want ErrReadOnly", err)
		}
	} else if err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("%d faults injected, %d appends acknowledged, engine %+v", plan.Injected(), acked, eng.Stats())

	// Reopen without faults.
	wantMin, wantMax := tc.lastMin, tc.lastMax
	if tc.failAt == 0 {
		wantMin, wantMax = tc.n, tc.n
	}
	rep, err := wal.Verify(dir)
	if err != nil {
		t.Errorf("Verify before the reopen: %v", err)
	} else {
		var torn int64
		for _, s := range rep.Segments {
			torn += s.TornTail
		}
		t.Logf("before the reopen Verify says %d..%d, %d segments, %d torn bytes", rep.FirstSeq, rep.LastSeq, len(rep.Segments), torn)
		if tc.tornTail && torn == 0 {
			t.Errorf("Verify after a torn write finds no torn tail: %+v", rep.Segments)
		}
	}
	l2 := faultOpen(t, dir, wal.Options{IOMode: mode})
	defer l2.Close()
	st := l2.Stats()
	last := l2.LastSeq()
	if last < wantMin || last > wantMax || last < acked {
		t.Fatalf("after the reopen the log ends at %d, want %d..%d (acknowledged: 1..%d)", last, wantMin, wantMax, acked)
	}
	checkSeqEntries(t, l2, last)
	if tc.tornTail && st.TailCuts != 1 {
		t.Errorf("reopen after a torn write: Stats().TailCuts = %d, want 1", st.TailCuts)
	}
	if !tc.tornTail && st.TailCuts != 0 {
		t.Errorf("reopen: Stats().TailCuts = %d, want 0", st.TailCuts)
	}
	// The log accepts appends again.
	for seq := last + 1; seq <= last+3; seq++ {
		got, err := l2.Append(seqPayload(seq, faultPayloadSize))
		if err != nil || got != seq {
			t.Fatalf("append after the reopen: seq %d, %v; want %d", got, err, seq)
		}
	}
	last += 3
	checkSeqEntries(t, l2, last)
	if err := l2.Close(); err != nil {
		t.Fatalf("Close after the reopen: %v", err)
	}
	checkVerify(t, dir, 1, last, false)
	l3 := faultOpen(t, dir, wal.Options{IOMode: mode})
	checkSeqEntries(t, l3, last)
	if err := l3.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkReadOnly checks that a failed log refuses every change without
// touching the files: no write, no fdatasync (never a retried one).
func checkReadOnly(t *testing.T, l *wal.Log, eng *ioengine.Engine, acked uint64) {
	t.Helper()
	before := eng.Stats()
	for range 3 {
		if _, err := l.Append([]byte("after the failure")); !errors.Is(err, wal.ErrReadOnly) {
			t.Errorf("Append on a read-only log: %v, want ErrReadOnly", err)
		}
	}
	if _, err := l.AppendBatch([][]byte{[]byte("a"), []byte("b")}); !errors.Is(err, wal.ErrReadOnly) {
		t.Errorf("AppendBatch on a read-only log: %v, want ErrReadOnly", err)
	}
	if err := l.TruncateFront(2); err == nil && acked >= 2 {
		t.Errorf("TruncateFront on a read-only log succeeded")
	}
	if err := l.TruncateBack(0); err == nil && acked > 0 {
		t.Errorf("TruncateBack on a read-only log succeeded")
	}
	after := eng.Stats()
	if after.Requests != before.Requests {
		t.Errorf("the read-only log made %d more requests (%+v, then %+v); it must not write or retry an fdatasync", after.Requests-before.Requests, before, after)
	}
	if l.FirstSeq() != 1 || l.LastSeq() != acked {
		t.Errorf("read-only log holds %d..%d, want 1..%d", l.FirstSeq(), l.LastSeq(), acked)
	}
}

// TestFaultRead: a failed read is returned, and changes nothing else: the
// log stays writable.
func TestFaultRead(t *testing.T) {
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			eng, plan := faultEngine(t, m.mode, ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead, Times: 2})
			l := faultOpen(t, dir, wal.Options{Engine: eng})
			defer l.Close()
			for seq := uint64(1); seq <= 3; seq++ {
				if _, err := l.Append(seqPayload(seq, faultPayloadSize)); err != nil {
					t.Fatal(err)
				}
			}
			// The active segment is read through the engine.
			for range 2 {
				if _, err := l.ReadAt(2); !errors.Is(err, unix.EIO) {
					t.Fatalf("ReadAt with an EIO injected: %v, want EIO", err)
				}
			}
			if plan.Injected() != 2 {
				t.Fatalf("%d faults injected, want 2", plan.Injected())
			}
			if err := l.Err(); err != nil {
				t.Fatalf("a failed read turned the log read-only: %v", err)
			}
			if _, err := l.Append(seqPayload(4, faultPayloadSize)); err != nil {
				t.Fatalf("Append after a failed read: %v", err)
			}
			checkSeqEntries(t, l, 4)
			// Short reads are finished.
			plan.Add(ioengine.Fault{Kind: ioengine.FaultShort, Op: ioengine.OpRead, Times: -1})
			checkSeqEntries(t, l, 4)
		})
	}
}

// concFaultCase is a fault hitting 8 concurrent appenders.
type concFaultCase struct {
	name    string
	faults  []ioengine.Fault
	fatal   bool // the log must turn read-only
	depth   int
	perGoro int
}

// TestFaultConcurrent injects faults while 8 goroutines append (groups of
// several entries, rotations, a pipeline of two): no panic, no hang, and no
// acknowledged entry lost. Acknowledgments come in order and a failure is
// permanent, so the acknowledged seqs are exactly 1..K.
func TestFaultConcurrent(t *testing.T) {
	const writers = 8
	cases := []concFaultCase{
		{name: "EIO_on_an_fdatasync", faults: []ioengine.Fault{{Kind: ioengine.FaultEIO, Op: ioengine.OpFdatasync, After: 40}}, fatal: true},
		{name: "EIO_on_an_early_fdatasync_depth_4", faults: []ioengine.Fault{{Kind: ioengine.FaultEIO, Op: ioengine.OpFdatasync, After: 3}}, fatal: true, depth: 4},
		{name: "EIO_on_a_write", faults: []ioengine.Fault{{Kind: ioengine.FaultEIO, Op: ioengine.OpWrite, After: 60}}, fatal: true},
		{name: "ENOSPC_on_a_write", faults: []ioengine.Fault{{Kind: ioengine.FaultENOSPC, Op: ioengine.OpWrite, After: 25}}, fatal: true},
		{name: "torn_write", faults: []ioengine.Fault{{Kind: ioengine.FaultTorn, Op: ioengine.OpWrite, After: 50}}, fatal: true},
		{name: "torn_write_depth_1", faults: []ioengine.Fault{{Kind: ioengine.FaultTorn, Op: ioengine.OpWrite, After: 30, Bytes: 100}}, fatal: true, depth: 1},
		{name: "short_writes_and_EAGAIN", faults: []ioengine.Fault{
			{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, Times: -1},
			{Kind: ioengine.FaultEAGAIN, Op: ioengine.OpFdatasync, Times: 100},
			{Kind: ioengine.FaultEAGAIN, Op: ioengine.OpWrite, After: 20, Times: 100},
		}},
	}
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					if tc.perGoro == 0 {
						tc.perGoro = 60
					}
					runConcFaultCase(t, m.mode, tc, writers)
				})
			}
		})
	}
}

func runConcFaultCase(t *testing.T, mode ioengine.IOMode, tc concFaultCase, writers int) {
	dir := t.TempDir()
	eng, plan := faultEngine(t, mode, tc.faults...)
	l := faultOpen(t, dir, wal.Options{Engine: eng, PipelineDepth: tc.depth})

	type ack struct {
		seq  uint64
		w, i uint64
	}
	var (
		mu    sync.Mutex
		acks  []ack
		errs  []error
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range tc.perGoro {
				seq, err := l.Append(idPayload(0, uint64(w), uint64(i)))
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					acks = append(acks, ack{seq, uint64(w), uint64(i)})
				}
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	close(start)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("appenders hung for 60 s; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
	}

	sort.Slice(acks, func(a, b int) bool { return acks[a].seq < acks[b].seq })
	for k, a := range acks {
		if a.seq != uint64(k+1) {
			t.Fatalf("acknowledged seqs are not 1..%d: the %d-th is %d", len(acks), k+1, a.seq)
		}
	}
	K := uint64(len(acks))
	t.Logf("%d appends acknowledged, %d failed, %d faults injected, %d groups, first error: %v",
		K, len(errs), plan.Injected(), l.Stats().Flushes, firstErr(errs))
	if plan.Injected() == 0 {
		t.Fatal("no fault was injected")
	}
	switch {
	case tc.fatal && l.Err() == nil:
		// The one fault hit the write of a new segment's header (a file
		// nobody reads yet), which is not permanent by design: the
		// appends of that group failed, the rest went on.
		if len(errs) == 0 {
			t.Fatal("no append failed")
		}
		for _, err := range errs {
			var oe *ioengine.OpError
			if errors.Is(err, wal.ErrReadOnly) || !errors.As(err, &oe) || oe.Op != ioengine.OpWrite {
				t.Fatalf("the log is not read-only, but an append failed with %v: only a failed write of a new segment may be retried", err)
			}
		}
		if K+uint64(len(errs)) != uint64(writers*tc.perGoro) {
			t.Fatalf("%d appends acknowledged and %d failed, of %d", K, len(errs), writers*tc.perGoro)
		}
		t.Logf("the fault hit a new segment, which is retried: %v", errs[0])
	case tc.fatal:
		if len(errs) == 0 {
			t.Fatal("no append failed")
		}
		for _, err := range errs {
			if !errors.Is(err, wal.ErrReadOnly) {
				t.Fatalf("append failed with %v, want ErrReadOnly", err)
			}
		}
		if _, err := l.Append([]byte("x")); !errors.Is(err, wal.ErrReadOnly) {
			t.Fatalf("Append after the failure: %v, want ErrReadOnly", err)
		}
	case len(errs) != 0 || K != uint64(writers*tc.perGoro):
		t.Fatalf("%d of %d appends acknowledged, errors: %v", K, writers*tc.perGoro, errs)
	}
	if l.LastSeq() != K {
		t.Fatalf("LastSeq() = %d, want the last acknowledged %d", l.LastSeq(), K)
	}
	checkAcked := func(l *wal.Log) {
		t.Helper()
		for _, a := range acks {
			p, err := l.ReadAt(a.seq)
			if err != nil {
				t.Fatalf("ReadAt(%d): %v", a.seq, err)
			}
			if !bytes.Equal(p, idPayload(0, a.w, a.i)) {
				t.Fatalf("ReadAt(%d): not the payload writer %d appended as its entry %d", a.seq, a.w, a.i)
			}
		}
	}
	checkAcked(l)
	l.Close()

	l2 := faultOpen(t, dir, wal.Options{IOMode: mode})
	defer l2.Close()
	if l2.FirstSeq() != 1 || l2.LastSeq() < K {
		t.Fatalf("after the reopen the log holds %d..%d; 1..%d were acknowledged", l2.FirstSeq(), l2.LastSeq(), K)
	}
	checkAcked(l2)
	// Entries past K were never acknowledged but are whole payloads that
	// were appended, each once.
	seen := map[[2]uint64]uint64{}
	it := l2.Iterator(1)
	n := uint64(0)
	for it.Next() {
		n++
		if it.Seq() != n {
			t.Fatalf("iterator: seq %d after %d", it.Seq(), n-1)
		}
		_, w, i, err := payloadID(it.Payload())
		if err != nil {
			t.Fatalf("entry %d: %v", it.Seq(), err)
		}
		if prev, dup := seen[[2]uint64{w, i}]; dup {
			t.Fatalf("entries %d and %d are both writer %d's entry %d", prev, it.Seq(), w, i)
		}
		seen[[2]uint64{w, i}] = it.Seq()
	}
	if err := it.Err(); err != nil || n != l2.LastSeq() {
		t.Fatalf("iterated %d entries, LastSeq %d, err %v", n, l2.LastSeq(), err)
	}
	for i := range 5 {
		if _, err := l2.Append(idPayload(1, 0, uint64(i))); err != nil {
			t.Fatalf("Append after the reopen: %v", err)
		}
	}
	last := l2.LastSeq()
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	checkVerify(t, dir, 1, last, false)
}

func firstErr(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

const (
	rotFilled  = faultPerSegment - 1 // seqs 1..7; 8 fills the segment
	rotFailing = rotFilled + 1
)

// TestFaultRotationAfterFailure: an append that reached the committer
// before a group failed must not make it seal the segment afterwards: the
// trailer then covers the failed group's bytes (never acknowledged; torn,
// missing or not flushed) while its LastSeq says the last acknowledged
// entry, so the segment looks corrupt and Open refuses the log. The failing
// group fills the segment; the first write of it is held in the engine
// (ioengine.Fault.Hold: a one-byte short write, issued only when released)
// until the next append, which needs a new segment, has been queued.
func TestFaultRotationAfterFailure(t *testing.T) {
	failing := uint64(rotFailing)
	cases := []struct {
		name  string
		fault ioengine.Fault
	}{
		// A fault listed after the hold sees only the requests the hold
		// let pass, so both count from the same write: for a write fault,
		// the rest of the held write.
		{"EIO_on_the_fdatasync", ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpFdatasync, After: opGroup(failing)}},
		{"EIO_on_the_write", ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpWrite, After: opGroup(failing)}},
		{"torn_write", ioengine.Fault{Kind: ioengine.FaultTorn, Op: ioengine.OpWrite, After: opGroup(failing)}},
	}
	for _, m := range faultModes {
		for _, depth := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/depth=%d", m.name, depth), func(t *testing.T) {
				for _, tc := range cases {
					t.Run(tc.name, func(t *testing.T) {
						t.Parallel()
						runRotationAfterFailure(t, m.mode, depth, tc.fault)
					})
				}
			})
		}
	}
}

func runRotationAfterFailure(t *testing.T, mode ioengine.IOMode, depth int, fault ioengine.Fault) {
	const filled, failing = rotFilled, uint64(rotFailing)
	hold := make(chan struct{})
	held := ioengine.Fault{Kind: ioengine.FaultShort, Op: ioengine.OpWrite, After: opGroup(failing), Bytes: 1, Hold: hold}
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release()
	dir := t.TempDir()
	eng, plan := faultEngine(t, mode, held, fault)
	var queued atomic.Int64
	opts := wal.Options{Engine: eng, PipelineDepth: depth}
	wal.SetQueuedHook(&opts, func() { queued.Add(1) })
	l := faultOpen(t, dir, opts)
	defer l.Close()
	for seq := uint64(1); seq <= filled; seq++ {
		if _, err := l.Append(seqPayload(seq, faultPayloadSize)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("30 s without %s", what)
			}
		}
	}
	before := queued.Load()
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { _, errA = l.Append(seqPayload(failing, faultPayloadSize)) })
	waitFor("the failing group's write in flight", func() bool { return plan.Injected() > 0 })
	wg.Go(func() { _, errB = l.Append(seqPayload(failing+1, faultPayloadSize)) })
	waitFor("the next append queued", func() bool { return queued.Load() >= before+2 })
	release()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("appends hung; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
	}
	t.Logf("the next append was queued while the failing group's write was held; %d faults injected; errors: %v; %v", plan.Injected(), errA, errB)
	if !errors.Is(errA, wal.ErrReadOnly) || !errors.Is(errB, wal.ErrReadOnly) {
		t.Errorf("appends: %v; %v; want ErrReadOnly both", errA, errB)
	}
	if l.LastSeq() != filled {
		t.Errorf("LastSeq() = %d, want %d", l.LastSeq(), filled)
	}
	l.Close()
	if rep, err := wal.Verify(dir); err != nil {
		t.Errorf("Verify after the failure: %v (report %+v)", err, rep.Segments)
	}
	l2, err := wal.Open(dir, wal.Options{IOMode: mode, SegmentSize: faultSegmentSize, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Open after the failure: %v", err)
	}
	defer l2.Close()
	if l2.LastSeq() < filled || l2.LastSeq() > failing+1 {
		t.Fatalf("after the reopen the log ends at %d; 1..%d were acknowledged, %d tried", l2.LastSeq(), filled, failing+1)
	}
	for seq := uint64(1); seq <= l2.LastSeq(); seq++ {
		if p, err := l2.ReadAt(seq); err != nil || !bytes.Equal(p, seqPayload(seq, faultPayloadSize)) {
			t.Fatalf("ReadAt(%d) after the reopen: %d bytes, %v", seq, len(p), err)
		}
	}
}

// TestFaultTruncate: a failed write or fdatasync in TruncateFront (the meta
// file) or TruncateBack (the new trailer) turns the log read-only, and a
// reopen finds the log as before or as after the truncation, never a hole.
func TestFaultTruncate(t *testing.T) {
	const n = 2*faultPerSegment + 4 // 20 entries: sealed 1..8 and 9..16, active 17..20
	next := opGroup(n) + 1          // the ordinal of the next write and fdatasync
	cases := []struct {
		name         string
		fault        ioengine.Fault
		front        bool   // TruncateFront(10), else TruncateBack(12)
		first        uint64 // the first entry after the reopen
		lastA, lastB uint64 // the last entry after the reopen: one of these
	}{
		{"front_EIO_on_the_meta_write", ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpWrite, After: next}, true, 1, n, n},
		{"front_EIO_on_the_meta_fdatasync", ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpFdatasync, After: next}, true, 1, n, n},
		{"front_torn_meta_write", ioengine.Fault{Kind: ioengine.FaultTorn, Op: ioengine.OpWrite, After: next}, true, 1, n, n},
		// TruncateBack removes segment 17 first, then reseals 9..16 at 12.
		{"back_EIO_on_the_trailer_write", ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpWrite, After: next}, false, 1, 12, 16},
		{"back_EIO_on_the_trailer_fdatasync", ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpFdatasync, After: next}, false, 1, 12, 16},
	}
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					eng, plan := faultEngine(t, m.mode, tc.fault)
					l := faultOpen(t, dir, wal.Options{Engine: eng})
					defer l.Close()
					for seq := uint64(1); seq <= n; seq++ {
						if _, err := l.Append(seqPayload(seq, faultPayloadSize)); err != nil {
							t.Fatalf("append %d: %v", seq, err)
						}
					}
					if plan.Injected() != 0 {
						t.Fatalf("a fault fired before the truncation")
					}
					var err error
					if tc.front {
						err = l.TruncateFront(10)
					} else {
						err = l.TruncateBack(12)
					}
					if plan.Injected() != 1 {
						t.Fatalf("%d faults injected by the truncation, want 1 (err %v)", plan.Injected(), err)
					}
					if !errors.Is(err, wal.ErrReadOnly) || !errors.Is(err, unix.EIO) || !errors.Is(l.Err(), wal.ErrReadOnly) {
						t.Fatalf("truncation: %v; Err() = %v; want ErrReadOnly wrapping EIO", err, l.Err())
					}
					if _, err := l.Append([]byte("x")); !errors.Is(err, wal.ErrReadOnly) {
						t.Fatalf("Append after a failed truncation: %v, want ErrReadOnly", err)
					}
					l.Close()
					if _, err := wal.Verify(dir); err != nil {
						t.Errorf("Verify after the failed truncation: %v", err)
					}
					l2 := faultOpen(t, dir, wal.Options{IOMode: m.mode})
					defer l2.Close()
					if l2.FirstSeq() != tc.first || (l2.LastSeq() != tc.lastA && l2.LastSeq() != tc.lastB) {
						t.Fatalf("after the reopen the log holds %d..%d, want %d..%d or %d..%d", l2.FirstSeq(), l2.LastSeq(), tc.first, tc.lastA, tc.first, tc.lastB)
					}
					checkSeqEntries(t, l2, l2.LastSeq())
					if tc.front {
						if err := l2.TruncateFront(10); err != nil || l2.FirstSeq() != 10 {
							t.Fatalf("TruncateFront(10) after the reopen: %v, first %d", err, l2.FirstSeq())
						}
					} else if err := l2.TruncateBack(12); err != nil || l2.LastSeq() != 12 {
						t.Fatalf("TruncateBack(12) after the reopen: %v, last %d", err, l2.LastSeq())
					}
					last := l2.LastSeq()
					if seq, err := l2.Append(seqPayload(last+1, faultPayloadSize)); err != nil || seq != last+1 {
						t.Fatalf("Append after the reopen: %d, %v", seq, err)
					}
					if err := l2.Close(); err != nil {
						t.Fatal(err)
					}
					checkVerify(t, dir, l2.FirstSeq(), last+1, false)
				})
			}
		})
	}
}

// TestFaultDSync runs the io_uring default, where a durable write is one
// RWF_DSYNC write, into an EIO and a torn write: the failing append makes
// the log read-only, and a reopen keeps exactly the acknowledged entries
// (and cuts the torn one).
func TestFaultDSync(t *testing.T) {
	for _, kind := range []ioengine.FaultKind{ioengine.FaultEIO, ioengine.FaultTorn} {
		t.Run(kind.String(), func(t *testing.T) {
			// Writes: the segment header (1), then one per append.
			eng, plan := faultEngine(t, ioengine.URing, ioengine.Fault{Kind: kind, Op: ioengine.OpWrite, After: 1 + 5, Bytes: 4096})
			if eng.Backend() != ioengine.BackendURing {
				t.Skip("io_uring is not available:", eng.FallbackReason())
			}
			dir := t.TempDir()
			l, err := wal.Open(dir, wal.Options{Engine: eng, SegmentSize: faultSegmentSize, PipelineDepth: 1, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			for seq := uint64(1); seq <= 5; seq++ {
				if got, err := l.Append(seqPayload(seq, faultPayloadSize)); err != nil || got != seq {
					t.Fatalf("append %d: %d, %v", seq, got, err)
				}
			}
			_, err = l.Append(seqPayload(6, faultPayloadSize))
			if !errors.Is(err, wal.ErrReadOnly) || !errors.Is(err, unix.EIO) {
				t.Fatalf("append 6 with a %s fault: %v, want ErrReadOnly wrapping EIO", kind, err)
			}
			if plan.Injected() != 1 {
				t.Fatalf("%d faults injected, want 1", plan.Injected())
			}
			if _, err := l.Append(seqPayload(7, faultPayloadSize)); !errors.Is(err, wal.ErrReadOnly) {
				t.Fatalf("append after the failure: %v, want ErrReadOnly", err)
			}
			l.Close()
			l2 := faultOpen(t, dir, wal.Options{IOMode: ioengine.URing})
			defer l2.Close()
			if l2.LastSeq() != 5 {
				t.Fatalf("after the reopen the log ends at %d, want 5", l2.LastSeq())
			}
			checkSeqEntries(t, l2, 5)
			if kind == ioengine.FaultTorn && l2.Stats().TailCuts != 1 {
				t.Fatalf("torn write: TailCuts %d, want 1", l2.Stats().TailCuts)
			}
		})
	}
}
