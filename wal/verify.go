package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// SegmentInfo describes one segment file as Verify found it.
type SegmentInfo struct {
	Path    string
	BaseSeq uint64
	LastSeq uint64 // base-1 when empty
	Size    int64
	DataEnd int64
	Sealed  bool
	// Reusable: format version 2 (Options.RecycleSegments), with a stale
	// table before the trailer page.
	Reusable bool
	TornTail int64 // bytes after the last entry that are not zeros (last, unsealed segment only): a torn tail Open would cut
	// TornEntries is how many whole entries the torn tail holds (written by
	// the group in flight, past its torn part; never acknowledged).
	TornEntries int
	// Closed: the last segment carries a clean-close mark (the log was
	// closed cleanly and not opened for writing since), and its entries are
	// the ones the mark records.
	Closed bool
}

// Entries returns the number of entries in the segment.
func (s SegmentInfo) Entries() uint64 { return s.LastSeq + 1 - s.BaseSeq }

// EntryBytes returns the bytes the segment's entries take, headers and
// payloads.
func (s SegmentInfo) EntryBytes() int64 { return s.DataEnd - SegmentHeaderSize }

// VerifyReport is what Verify found.
type VerifyReport struct {
	Dir      string
	FirstSeq uint64 // from wal.meta, or the first segment's base
	LastSeq  uint64
	Segments []SegmentInfo
}

// Verify checks every byte of the log in dir without changing anything:
// wal.meta, every segment's header and trailer, every entry and its CRC,
// the data CRC of sealed segments and the sequence from one segment to the
// next. Damage is returned as a *CorruptError naming the file and offset;
// a torn tail of the last segment (which Open would cut) is not damage and
// shows in the report; what tells them apart is Open's rule (tail.go), with
// the default Options' group and entry limits. The report holds what was
// read up to the damage.
func Verify(dir string) (VerifyReport, error) { return verifyView(dir, nil) }

// repairView is the log as a dry run of Repair sees it: the changes it
// would have made so far, laid over the files, which it leaves alone.
type repairView struct {
	meta    uint64                 // first seq of the rewritten wal.meta; 0: as on disk
	removed map[uint64]bool        // bases of the segments removed
	sealed  map[uint64]SegmentInfo // bases of the segments sealed again: as they would verify
}

// segments lists the segment files in dir less those view removed (all
// of them for a nil view).
func (view *repairView) segments(dir string) ([]uint64, error) {
	bases, err := listSegments(dir, false)
	if view != nil {
		bases = slices.DeleteFunc(bases, func(b uint64) bool { return view.removed[b] })
	}
	return bases, err
}

// verifyView is Verify of the log with view's changes laid over it (nil:
// the files as they are).
func verifyView(dir string, view *repairView) (VerifyReport, error) {
	rep := VerifyReport{Dir: dir}
	var first uint64
	var err error
	if view != nil && view.meta != 0 {
		first = view.meta
	} else if first, err = readMeta(dir); err != nil {
		return rep, err
	}
	bases, err := view.segments(dir)
	if err != nil {
		return rep, err
	}
	var prev *SegmentInfo
	for i, base := range bases {
		info, sealed := SegmentInfo{}, false
		if view != nil {
			info, sealed = view.sealed[base]
		}
		if !sealed {
			if info, err = verifySegment(filepath.Join(dir, segmentName(base)), base, i == len(bases)-1); err != nil {
				return rep, err
			}
		}
		if prev != nil && info.BaseSeq != prev.LastSeq+1 {
			return rep, gapError(info.Path, info.BaseSeq, prev.Path, prev.LastSeq)
		}
		rep.Segments = append(rep.Segments, info)
		prev = &rep.Segments[len(rep.Segments)-1]
	}
	if first == 0 {
		first = 1
		if len(rep.Segments) > 0 {
			first = rep.Segments[0].BaseSeq
		}
	}
	rep.FirstSeq, rep.LastSeq = first, first-1
	if prev != nil {
		rep.LastSeq = max(prev.LastSeq, first-1)
		if rep.Segments[0].BaseSeq > first {
			return rep, startError(dir, first, rep.Segments[0].Path, rep.Segments[0].BaseSeq)
		}
	}
	return rep, nil
}

func verifySegment(path string, base uint64, isLast bool) (SegmentInfo, error) {
	sf, err := checkSegment(path, base, isLast, nil, false)
	if err != nil {
		return SegmentInfo{}, err
	}
	return sf.Info, sf.Close()
}

// errGap marks a segment that does not start where the previous one ended.
var errGap = errors.New("segments do not follow")

// RepairReport says what Repair cut, or what PlanRepair found it would.
type RepairReport struct {
	Actions      []string // what was done (or would be), one line each
	LostFrom     uint64   // first seq no longer in the log (0 when nothing was lost)
	LastSeqAfter uint64
	DryRun       bool // PlanRepair's: nothing was changed
	// Backend and FallbackReason are the engine Repair wrote with (zero
	// for PlanRepair, which only reads).
	Backend        ioengine.Backend
	FallbackReason string
}

// Repair cuts the log in dir at its first damage so that it opens again:
// the damaged segment is sealed after its last good entry (or removed when
// it has none) and the later segments that then no longer follow are
// removed. Entries after the damage are lost — this is the user's explicit
// choice, never something Open does by itself. A log without damage is
// left as it is.
func Repair(dir string, opts Options) (RepairReport, error) {
	var rep RepairReport
	opts, err := opts.withDefaults()
	if err != nil {
		return rep, err
	}
	lock, err := lockDir(filepath.Join(dir, lockName))
	if err != nil {
		return rep, err
	}
	l := &Log{dir: dir, opts: opts, lock: lock, notify: make(chan struct{})}
	if l.eng, err = ioengine.New(ioengine.Options{Mode: opts.IOMode, Logf: opts.Logf}); err != nil {
		lock.Close()
		return rep, fmt.Errorf("wal: %w", err)
	}
	l.ownEngine = true
	defer l.releaseAll()
	rep, err = repair(dir, l, nil)
	rep.Backend, rep.FallbackReason = l.eng.Backend(), l.eng.FallbackReason()
	return rep, err
}

// PlanRepair returns what Repair would do to the log in dir, changing
// nothing: the same rounds, each deciding on the log as the rounds before
// it would have left it (Report.DryRun is set). It takes no lock, as
// Verify does not; a log being written meanwhile can make the plan stale.
func PlanRepair(dir string) (RepairReport, error) {
	return repair(dir, nil, &repairView{removed: map[uint64]bool{}, sealed: map[uint64]SegmentInfo{}})
}

// repair runs Repair's rounds: on the log through l, or, with view, as a
// dry run that records its changes in view instead of making them.
func repair(dir string, l *Log, view *repairView) (RepairReport, error) {
	rep := RepairReport{DryRun: view != nil}
	seen := map[string]bool{}
	for { // every round removes or reseals a segment, or rewrites wal.meta
		v, err := verifyView(dir, view)
		var ce *CorruptError
		if !errors.As(err, &ce) {
			rep.LastSeqAfter = v.LastSeq
			return rep, err
		}
		if key := ce.Error(); seen[key] {
			return rep, fmt.Errorf("wal: repair of %s made no progress at: %w", dir, ce)
		} else {
			seen[key] = true
		}
		if filepath.Base(ce.Path) == format.MetaName {
			first := uint64(1)
			if len(v.Segments) > 0 {
				first = v.Segments[0].BaseSeq
			} else if bases, _ := view.segments(dir); len(bases) > 0 {
				first = bases[0]
			}
			if view != nil {
				view.meta = first
			} else if err := l.writeMeta(first); err != nil {
				return rep, err
			}
			rep.Actions = append(rep.Actions, fmt.Sprintf("%s: %v; %s it with first seq %d", ce.Path, ce.Err, verb(view, "rewrote", "would rewrite"), first))
			continue
		}
		if err := repairSegment(dir, l, view, ce, &rep); err != nil {
			return rep, err
		}
	}
}

// verb returns done for a repair, planned for a dry run.
func verb(view *repairView, done, planned string) string {
	if view != nil {
		return planned
	}
	return done
}

// repairSegment cuts the log at the damage ce reports. A segment that does
// not follow the one before it is removed with every later one (newest
// first). A damaged segment is sealed again after its last good entry, or
// removed with every later one when it has none; if later segments then no
// longer follow, the next round removes them. With view the changes go
// there instead of to the files.
func repairSegment(dir string, l *Log, view *repairView, ce *CorruptError, rep *RepairReport) error {
	base, ok := parseSegmentName(filepath.Base(ce.Path))
	if !ok {
		return ce
	}
	sf, err := salvageSegment(ce.Path, base)
	if err != nil {
		return err
	}
	var r scanResult
	keep := sf != nil && len(sf.r.index) > 0
	if sf != nil {
		r = sf.r
		sf.Close()
	}
	if keep && !errors.Is(ce, errGap) {
		if view != nil {
			view.sealed[base] = SegmentInfo{Path: ce.Path, BaseSeq: base, LastSeq: r.last, Size: sf.Info.Size, DataEnd: r.dataEnd, Sealed: true}
		} else if err := l.seal(&segment{base: base, path: ce.Path, size: sf.Info.Size, reusable: sf.Info.Reusable, last: r.last}, r.dataEnd, r.crc); err != nil {
			return err
		}
		rep.Actions = append(rep.Actions, fmt.Sprintf("%s: %v; %s it after seq %d (offset %d)", ce.Path, ce.Err, verb(view, "sealed", "would seal"), r.last, r.dataEnd))
		if ce.Offset < sf.Info.Size-TrailerSize { // the damage was in the data, not the trailer
			rep.noteLoss(r.last + 1)
		}
		return nil
	}
	bases, err := view.segments(dir)
	if err != nil {
		return err
	}
	for i := len(bases) - 1; i >= 0 && bases[i] >= base; i-- {
		p := filepath.Join(dir, segmentName(bases[i]))
		if view != nil {
			view.removed[bases[i]] = true
		} else if err := l.removeDurably(p); err != nil {
			return err
		}
		what := verb(view, "removed ", "would remove ") + p
		if bases[i] == base {
			what = fmt.Sprintf("%s: %v; %s it", p, ce.Err, verb(view, "removed", "would remove"))
		}
		rep.Actions = append(rep.Actions, what)
		rep.noteLoss(bases[i])
	}
	return nil
}

func (rep *RepairReport) noteLoss(from uint64) {
	if rep.LostFrom == 0 || from < rep.LostFrom {
		rep.LostFrom = from
	}
}

// salvageSegment scans a damaged segment from its header to its first
// entry that is not valid (or the trailer). It returns nil when the header
// cannot be trusted (nothing in the file can).
func salvageSegment(path string, base uint64) (*SegmentFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	st, err := f.Stat()
	var hb [SegmentHeaderSize]byte
	if err == nil {
		_, err = f.ReadAt(hb[:], 0)
	}
	f.Close()
	if err != nil && st == nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	h, err := format.DecodeSegmentHeader(hb[:])
	if err != nil || h.BaseSeq != base || int64(h.Size) != st.Size() || st.Size()%4096 != 0 {
		return nil, nil
	}
	s := &SegmentFile{Info: SegmentInfo{Path: path, BaseSeq: base, Size: st.Size(), Reusable: h.Reusable}}
	if s.img, err = mapFile(path, st.Size()); err != nil {
		return nil, err
	}
	s.r = scanEntries(s.img, base, h.DataLimit())
	s.Info.LastSeq, s.Info.DataEnd = s.r.last, s.r.dataEnd
	return s, nil
}
