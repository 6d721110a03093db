package bench

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRoundRatios: each round's trial of a against the same round's of b,
// rounds where b's figure is not positive left out, as many as the shorter
// mode ran.
func TestRoundRatios(t *testing.T) {
	a := &ModeResult{Trials: []Trial{{Ops: 300, Seconds: 1}, {Ops: 200, Seconds: 1}, {Ops: 100, Seconds: 1}, {Ops: 50, Seconds: 1}}}
	b := &ModeResult{Trials: []Trial{{Ops: 100, Seconds: 1}, {Ops: 0, Seconds: 1}, {Ops: 200, Seconds: 1}}}
	got := RoundRatios(a, b, Trial.Rate)
	if want := []float64{3, 0.5}; !slices.Equal(got, want) {
		t.Errorf("RoundRatios = %v, want %v", got, want)
	}
	if got := RoundRatios(a, &ModeResult{}, Trial.Rate); len(got) != 0 {
		t.Errorf("against no trials: %v", got)
	}
}

// TestRunRepeat: a mode with Repeat runs that many trials in each round,
// the others one; a mode that fails runs no more trials.
func TestRunRepeat(t *testing.T) {
	var order []string
	mode := func(name string, repeat int, failAt int) Mode {
		n := 0
		return Mode{Name: name, Repeat: repeat, Exec: func() (Trial, error) {
			n++
			order = append(order, name)
			if n == failAt {
				return Trial{}, errors.New("broken")
			}
			return Trial{Ops: int64(n), Seconds: 1}, nil
		}}
	}
	results, err := Run([]Mode{mode("a", 0, 0), mode("b", 2, 0), mode("c", 3, 4)}, 3, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "mode c: broken") {
		t.Errorf("Run: %v, want mode c's failure", err)
	}
	want := []string{"a", "b", "b", "c", "c", "c", "b", "b", "c", "a", "a", "b", "b"}
	if !slices.Equal(order, want) {
		t.Errorf("trials ran in the order %v, want %v", order, want)
	}
	for i, n := range []int{3, 6, 3} {
		if got := len(results[i].Trials); got != n {
			t.Errorf("mode %s: %d trials, want %d", results[i].Mode.Name, got, n)
		}
	}
}

// TestRunTakesTurns: modes next to one another with the same Repeat take
// turns, one trial each, the first of them alternating from round to
// round; a mode of another Repeat, or one the rotation puts apart, runs
// its trials together.
func TestRunTakesTurns(t *testing.T) {
	var order []string
	mode := func(name string, repeat int) Mode {
		return Mode{Name: name, Repeat: repeat, Exec: func() (Trial, error) {
			order = append(order, name)
			return Trial{Ops: 1, Seconds: 1}, nil
		}}
	}
	if _, err := Run([]Mode{mode("on", 2), mode("off", 2), mode("z", 1), mode("w", 3)}, 4, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"on", "off", "on", "off", "z", "w", "w", "w", // round 1: on, off, z, w
		"off", "off", "z", "w", "w", "w", "on", "on", // round 2: off, z, w, on (apart)
		"z", "w", "w", "w", "on", "off", "on", "off", // round 3: z, w, on, off
		"w", "w", "w", "off", "on", "off", "on", "z", // round 4: w, on, off, z, reversed
	}
	if !slices.Equal(order, want) {
		t.Errorf("trials ran in the order\n%v, want\n%v", order, want)
	}
}

// TestDeviceSpanDepth: the mean reads in flight are the read time the
// device counted over the span ÷ the span; a span whose counts could not
// be read, or went backwards, or of no length, gives 0.
func TestDeviceSpanDepth(t *testing.T) {
	s := DeviceSpan{from: DeviceCounts{InFlight: 3 * time.Second}, to: DeviceCounts{InFlight: 9 * time.Second}, ok: true}
	if got := s.Depth(2); got != 3 {
		t.Errorf("6 s of reads in flight over 2 s: depth %v, want 3", got)
	}
	if got := s.Depth(0); got != 0 {
		t.Errorf("a span of no length: depth %v, want 0", got)
	}
	s.ok = false
	if got := s.Depth(2); got != 0 {
		t.Errorf("counts not read: depth %v, want 0", got)
	}
}

// TestDeviceSpanBusy: the share of a span the device was busy is its
// io_ticks over the span ÷ the span, at most 1; what it wrote is the
// difference of its written bytes; either is 0 where the counts lacked
// those fields, could not be read or went backwards.
func TestDeviceSpanBusy(t *testing.T) {
	s := DeviceSpan{from: DeviceCounts{Busy: time.Second, WrittenBytes: 1000, Full: true}, to: DeviceCounts{Busy: 2500 * time.Millisecond, WrittenBytes: 5000, Full: true}, ok: true}
	if got := s.Busy(2); got != 0.75 {
		t.Errorf("1.5 s busy over 2 s: %v, want 0.75", got)
	}
	if got := s.Busy(1); got != 1 {
		t.Errorf("1.5 s busy over 1 s (io_ticks counts whole milliseconds): %v, want 1", got)
	}
	if got := s.WrittenBytes(); got != 4000 {
		t.Errorf("written %v, want 4000", got)
	}
	for name, bad := range map[string]DeviceSpan{
		"not read":  {from: s.from, to: s.to},
		"no fields": {from: DeviceCounts{Busy: time.Second}, to: DeviceCounts{Busy: 2 * time.Second}, ok: true},
		"backwards": {from: s.to, to: s.from, ok: true},
	} {
		if b, w := bad.Busy(2), bad.WrittenBytes(); b != 0 || w != 0 {
			t.Errorf("%s: busy %v, written %v; want 0 and 0", name, b, w)
		}
	}
}
