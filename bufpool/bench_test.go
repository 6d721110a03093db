package bufpool

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// BenchmarkPin measures what a Pin costs:
//
//	path=hit          Pin + Unpin of one resident frame (one goroutine)
//	path=hit-parallel the same from GOMAXPROCS goroutines over 64 frames
//	path=miss         Pin + Unpin of a frame that is never resident: one
//	                  O_DIRECT read per op through the I/O goroutines
//	path=engine-read  the engine's ReadAt of the same frames, no pool: the
//	                  floor under path=miss
//	path=miss-batch64 one Pin of 64 random frames, all misses (a MultiGet)
//
// Misses read a file four times the pool, cycling, so nothing is ever
// resident when pinned. Run it with, e.g.,
//
//	go test -run XXX -bench BenchmarkPin -benchtime 2000x ./bufpool
func BenchmarkPin(b *testing.B) {
	for _, fs := range []int{4 << 10, 256 << 10} {
		for _, be := range backends {
			b.Run(fmt.Sprintf("frame=%dKiB/backend=%s", fs>>10, be.name), func(b *testing.B) {
				benchPin(b, fs, be.mode)
			})
		}
	}
}

func benchPin(b *testing.B, fs int, mode ioengine.IOMode) {
	dir := testdir.Direct(b)
	eng := newEngine(b, mode, nil)
	const frames = 64
	fileFrames := int64(4 * frames)
	file := writeFile(b, dir, "bench", int(fileFrames)*fs, 1)
	// Each path gets a fresh pool, so no path finds what another left.
	var p *Pool
	var tf *testFile
	fresh := func(b *testing.B) {
		p = newPool(b, eng, Options{FrameSize: fs, Budget: int64(frames * fs)})
		id, err := p.Register(file.ef, int64(len(file.data)), "bench")
		if err != nil {
			b.Fatal(err)
		}
		tf = &testFile{path: file.path, data: file.data, f: file.f, id: id}
	}

	b.Run("path=hit", func(b *testing.B) {
		fresh(b)
		s := []Span{{tf.id, 100, 200}}
		dst := make([]*Frame, 0, 1)
		warm, err := p.Pin(s, dst)
		if err != nil {
			b.Fatal(err)
		}
		unpinAll(warm)
		before := p.Stats()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			got, err := p.Pin(s, dst[:0])
			if err != nil {
				b.Fatal(err)
			}
			got[0].Unpin()
		}
		b.StopTimer()
		if st := p.Stats(); st.Misses != before.Misses {
			b.Fatalf("hit path missed: %s", st)
		}
	})
	b.Run("path=hit-parallel", func(b *testing.B) {
		fresh(b)
		warm, err := p.Pin([]Span{{tf.id, 0, int64(32 * fs)}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		unpinAll(warm)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			dst := make([]*Frame, 0, 1)
			for pb.Next() {
				k := r.Int64N(32)
				got, err := p.Pin([]Span{{tf.id, k * int64(fs), 10}}, dst[:0])
				if err != nil {
					b.Error(err)
					return
				}
				got[0].Unpin()
			}
		})
	})
	b.Run("path=miss", func(b *testing.B) {
		fresh(b)
		next := int64(0)
		before := p.Stats()
		dst := make([]*Frame, 0, 1)
		b.SetBytes(int64(fs))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			k := next % fileFrames
			next++
			got, err := p.Pin([]Span{{tf.id, k * int64(fs), int64(fs)}}, dst[:0])
			if err != nil {
				b.Fatal(err)
			}
			got[0].Unpin()
		}
		b.StopTimer()
		st := p.Stats()
		hits := st.Hits - before.Hits
		b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
	})
	b.Run("path=engine-read", func(b *testing.B) {
		// The engine alone, read for read what path=miss asks of it: the
		// pool's cost on a miss is path=miss minus this.
		fresh(b)
		buf := p.arena[:fs:fs] // frame 0's memory, as path=miss reads into
		next := int64(0)
		b.SetBytes(int64(fs))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			k := next % fileFrames
			next++
			if _, err := eng.ReadAt(file.fd(), buf, k*int64(fs)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=miss-batch64", func(b *testing.B) {
		fresh(b)
		r := rand.New(rand.NewPCG(3, 3))
		spans := make([]Span, 64)
		dst := make([]*Frame, 0, 64)
		before := p.Stats()
		b.SetBytes(int64(64 * fs))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			// 64 distinct frames, so that none is resident from the last op
			// more than by chance.
			base := r.Int64N(fileFrames)
			for i := range spans {
				k := (base + int64(i)*3) % fileFrames
				spans[i] = Span{tf.id, k*int64(fs) + 5, 10}
			}
			got, err := p.Pin(spans, dst[:0])
			if err != nil {
				b.Fatal(err)
			}
			unpinAll(got)
		}
		b.StopTimer()
		st := p.Stats()
		b.ReportMetric(float64(st.Misses-before.Misses)/float64(b.N), "misses/op")
		b.ReportMetric(float64(st.EngineCalls-before.EngineCalls)/float64(b.N), "enginecalls/op")
	})
}

// BenchmarkAnnouncedMiss measures a miss in a pool whose every frame is
// announced and waiting for a second scan: two scans announced the whole
// file, the leader has pinned the first Frames frames (each keeps one open
// announcement, for the follower), and every op is the leader's Pin of its
// next frame, which must take an announced frame (the newest). What the
// eviction costs beside the read must not grow with the pool: compare
// frames=1024 with frames=16384. Run it with, e.g.,
//
//	go test -run XXX -bench BenchmarkAnnouncedMiss -benchtime 4000x ./bufpool
func BenchmarkAnnouncedMiss(b *testing.B) {
	for _, frames := range []int{1024, 16384} {
		b.Run(fmt.Sprintf("frames=%d", frames), func(b *testing.B) {
			const fs = 4 << 10
			dir := testdir.Direct(b)
			eng := newEngine(b, ioengine.URing, nil)
			p := newPool(b, eng, Options{FrameSize: fs, Budget: int64(frames * fs)})
			fileFrames := int64(3 * frames)
			tf := register(b, p, dir, "announced", int(fileFrames)*fs, 7)
			whole := []Span{{tf.id, 0, fileFrames * fs}}
			p.Announce(whole)
			p.Announce(whole)
			dst := make([]*Frame, 0, 1)
			pin := func(k int64) {
				got, err := p.Pin([]Span{{tf.id, k * fs, fs}}, dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				got[0].Unpin()
			}
			for k := range int64(frames) {
				pin(k)
			}
			before := p.Stats()
			b.SetBytes(fs)
			b.ResetTimer()
			i := int64(0)
			for b.Loop() {
				pin(int64(frames) + i%(2*int64(frames)))
				i++
			}
			b.StopTimer()
			st := p.Stats()
			b.ReportMetric(float64(st.AnnouncedEvictions-before.AnnouncedEvictions)/float64(b.N), "announced-evictions/op")
			p.Retract(whole)
			p.Retract(whole)
		})
	}
}
