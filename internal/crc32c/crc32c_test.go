package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestMatchesHashCRC32 compares Update with hash/crc32 over every length
// up to a few folding steps past the main loop, at every start offset
// within 64 bytes, from random initial values.
func TestMatchesHashCRC32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 0; n <= 1300; n++ {
		for _, off := range []int{0, 1, 7, 16, 33, 63} {
			p := buf[off : off+n]
			crc := rng.Uint32()
			if got, want := Update(crc, p), crc32.Update(crc, Table, p); got != want {
				t.Fatalf("Update(%#x, %d bytes at offset %d) = %#x, hash/crc32 %#x", crc, n, off, got, want)
			}
		}
	}
	for _, n := range []int{2048, 4095, 4096} {
		if got, want := Checksum(buf[:n]), crc32.Checksum(buf[:n], Table); got != want {
			t.Fatalf("Checksum(%d bytes) = %#x, hash/crc32 %#x", n, got, want)
		}
	}
}

// TestKnownValue checks the standard check value of CRC-32C ("123456789"),
// and one long input whose value comes from hash/crc32.
func TestKnownValue(t *testing.T) {
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("Checksum(123456789) = %#x, want 0xe3069283", got)
	}
	p := make([]byte, 1<<20)
	for i := range p {
		p[i] = byte(i * 7)
	}
	if got, want := Checksum(p), crc32.Checksum(p, Table); got != want {
		t.Fatalf("Checksum(1 MiB) = %#x, want %#x", got, want)
	}
}

// TestSplitUpdates checks that a checksum built in pieces of any sizes
// equals the one-shot checksum, as the streaming callers use it.
func TestSplitUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := make([]byte, 64<<10)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	want := crc32.Checksum(p, Table)
	for range 200 {
		var crc uint32
		for q := p; len(q) > 0; {
			n := min(len(q), rng.IntN(3000))
			crc = Update(crc, q[:n])
			q = q[n:]
		}
		if crc != want {
			t.Fatalf("pieces give %#x, one shot %#x", crc, want)
		}
	}
}

func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), []byte("123456789"))
	f.Add(uint32(0xffffffff), make([]byte, 300))
	f.Fuzz(func(t *testing.T, crc uint32, p []byte) {
		if got, want := Update(crc, p), crc32.Update(crc, Table, p); got != want {
			t.Fatalf("Update(%#x, %d bytes) = %#x, hash/crc32 %#x", crc, len(p), got, want)
		}
	})
}

func benchmarkChecksum(b *testing.B, n int, f func([]byte) uint32) {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		f(p)
	}
}

func BenchmarkChecksum(b *testing.B) {
	std := func(p []byte) uint32 { return crc32.Checksum(p, Table) }
	for _, n := range []int{512, 4096, 1 << 20} {
		b.Run("crc32c/"+itoa(n), func(b *testing.B) { benchmarkChecksum(b, n, Checksum) })
		b.Run("hash-crc32/"+itoa(n), func(b *testing.B) { benchmarkChecksum(b, n, std) })
	}
}

func itoa(n int) string {
	switch {
	case n >= 1<<20:
		return string(rune('0'+n>>20)) + "MiB"
	default:
		s := ""
		for ; n > 0; n /= 10 {
			s = string(rune('0'+n%10)) + s
		}
		return s
	}
}

// TestFoldUsed reports whether this machine exercised the folding code, so
// that a run on a machine without it does not pass for a test of it.
func TestFoldUsed(t *testing.T) {
	if foldable(4096) == 0 {
		t.Skip("no folding code on this machine: Update is hash/crc32's")
	}
	p := make([]byte, 4096)
	for i := range p {
		p[i] = byte(i * 13)
	}
	if got, want := ^fold(^uint32(0), p), crc32.Checksum(p, Table); got != want {
		t.Fatalf("fold = %#x, hash/crc32 %#x", got, want)
	}
}
