package bufpool

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestCheckRange: CheckRange verifies each run of units not verified since
// the frame's load, once, with the frame's bytes widened to whole units and
// cut at its end; a failed run stays unverified; MarkChecked covers the
// whole frame; a frame loaded again starts with nothing verified.
func TestCheckRange(t *testing.T) {
	const fs = 16 * CheckUnit
	eng := newEngine(t, ioengine.URing, nil)
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	tf := register(t, p, testdir.Direct(t), "a", 3*fs+1000, 1)

	type call struct{ off, n int }
	var calls []call
	check := func(fr *Frame, off, n int, fail bool) error {
		t.Helper()
		calls = calls[:0]
		return fr.CheckRange(off, n, func(o int, b []byte) error {
			calls = append(calls, call{o, len(b)})
			if !bytes.Equal(b, tf.data[fr.Offset()+int64(o):fr.Offset()+int64(o+len(b))]) {
				t.Errorf("verify(%d, %d bytes) was given other bytes than the file's", o, len(b))
			}
			if fail {
				return errors.New("bad")
			}
			return nil
		})
	}
	want := func(what string, w ...call) {
		t.Helper()
		if len(calls) != len(w) {
			t.Fatalf("%s: verify called %v, want %v", what, calls, w)
		}
		for i := range w {
			if calls[i] != w[i] {
				t.Fatalf("%s: verify called %v, want %v", what, calls, w)
			}
		}
	}

	frames, err := p.Pin([]Span{{tf.id, 0, fs}, {tf.id, 3 * fs, 1000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fr, last := frames[0], frames[1]
	if err := check(fr, 100, 5000, false); err != nil {
		t.Fatal(err)
	}
	want("units 0-1", call{0, 2 * CheckUnit})
	if err := check(fr, 0, 6*CheckUnit, false); err != nil {
		t.Fatal(err)
	}
	want("units 0-5 after 0-1", call{2 * CheckUnit, 4 * CheckUnit})
	if err := check(fr, CheckUnit, 4*CheckUnit, false); err != nil {
		t.Fatal(err)
	}
	want("units already verified")
	if err := check(fr, 8*CheckUnit, 10, true); err == nil || err.Error() != "bad" {
		t.Fatalf("a failing verify: %v", err)
	}
	want("unit 8, failing", call{8 * CheckUnit, CheckUnit})
	if err := check(fr, 7*CheckUnit, 3*CheckUnit, false); err != nil {
		t.Fatal(err)
	}
	want("units 7-9 after unit 8 failed", call{7 * CheckUnit, 3 * CheckUnit})
	if err := check(fr, 0, fs, false); err != nil {
		t.Fatal(err)
	}
	want("the rest of the frame", call{6 * CheckUnit, CheckUnit}, call{10 * CheckUnit, 6 * CheckUnit})
	if err := check(last, 10, 20, false); err != nil {
		t.Fatal(err)
	}
	want("a frame of 1000 bytes", call{0, 1000})
	unpinAll(frames)

	frames, err = p.Pin([]Span{{tf.id, fs, 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames[0].MarkChecked()
	if err := check(frames[0], 0, fs, true); err != nil {
		t.Fatal(err)
	}
	want("a frame MarkChecked")
	unpinAll(frames)

	// Every slot loaded again with another file's frames: each starts
	// with nothing verified, whatever its earlier frame had.
	other := register(t, p, testdir.Direct(t), "b", 8*fs, 2)
	var spans []Span
	for i := range 8 {
		spans = append(spans, Span{other.id, int64(i) * fs, fs})
	}
	if frames, err = p.Pin(spans, nil); err != nil {
		t.Fatal(err)
	}
	for _, fr := range frames {
		calls = calls[:0]
		if err := fr.CheckRange(0, fs, func(o int, b []byte) error {
			calls = append(calls, call{o, len(b)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want("frame "+fr.String()+", loaded into a slot used before", call{0, fs})
	}
	unpinAll(frames)
}
