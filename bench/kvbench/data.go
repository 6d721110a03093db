package kvbench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
)

// The data set: key i (0 ≤ i < n) is "user" followed by the decimal digits
// of perm48(i), zero-padded to a length between 16 and 32 bytes chosen from
// the same number; its value is a state row of 200 to 400 bytes that starts
// with i (8 bytes, little endian), so that a reader can check it got the
// value of the key it asked for. Both depend on i alone: every system of the
// benchmark loads the same bytes, and the key order in which they are
// loaded (i = 0, 1, ...) is a scattered order of the keys.
//
// Key lengths: perm48 is below 2^48, whose decimal has at most 15 digits,
// so "user" + digits fits in 19 bytes; the padded length 16+(x mod 17) is
// raised to the digits' length where it is shorter. Two keys are never
// equal: the digits of a key give back x, and perm48 is a bijection.

// Key and value sizes.
const (
	MinKeyLen   = 16
	MaxKeyLen   = 32
	MinValueLen = 200
	MaxValueLen = 400
	// MaxKeys is the largest key count the key scheme covers (perm48 is a
	// permutation of [0, 2^48)).
	MaxKeys = 1 << 48
)

const mask48 = 1<<48 - 1

// perm48 is a bijection of [0, 2^48): multiplications by odd constants and
// xor-shifts to the right, each invertible modulo 2^48.
func perm48(i uint64) uint64 {
	x := i & mask48
	x = (x * 0x9E3779B97F4B) & mask48
	x ^= x >> 23
	x = (x * 0xC2B2AE3D27D5) & mask48
	x ^= x >> 19
	x = (x * 0x165667B19E37) & mask48
	x ^= x >> 24
	return x
}

// AppendKey appends key i to dst.
func AppendKey(dst []byte, i uint64) []byte {
	x := perm48(i)
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], x, 10)
	n := MinKeyLen + int(x%uint64(MaxKeyLen-MinKeyLen+1))
	n = max(n, 4+len(d))
	dst = append(dst, "user"...)
	for range n - 4 - len(d) {
		dst = append(dst, '0')
	}
	return append(dst, d...)
}

// Key returns key i.
func Key(i uint64) []byte { return AppendKey(make([]byte, 0, MaxKeyLen), i) }

// ValueLen returns the length of value i.
func ValueLen(i uint64) int {
	h := splitmix(i ^ 0x5bd1e995)
	return MinValueLen + int(h%uint64(MaxValueLen-MinValueLen+1))
}

// AppendValue appends value i to dst: i (8 bytes, little endian), then
// ASCII fields of a state row ("count=…;sum=…;last=…;") and pseudo-random
// bytes up to ValueLen(i).
func AppendValue(dst []byte, i uint64) []byte {
	n := ValueLen(i)
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, i)
	h := splitmix(i)
	dst = fmt.Appendf(dst, "count=%d;sum=%d;last=%d;", h%100000, (h>>17)%10000000, (h>>40)%1000000)
	s := h | 1
	for len(dst)-start+8 <= n {
		s = splitmix(s)
		dst = binary.LittleEndian.AppendUint64(dst, s)
	}
	for len(dst)-start < n {
		s = splitmix(s)
		dst = append(dst, byte(s))
	}
	return dst
}

// Value returns value i.
func Value(i uint64) []byte { return AppendValue(make([]byte, 0, MaxValueLen), i) }

// CheckValue reports whether v can be value i: its length and its first 8
// bytes. (A full comparison would cost more than some reads; the length and
// the index catch a value of another key.)
func CheckValue(v []byte, i uint64) bool {
	return len(v) == ValueLen(i) && binary.LittleEndian.Uint64(v) == i
}

// DataBytes returns the bytes of the keys and values of a data set of n
// keys (what is loaded, before any system's overhead), computed exactly for
// small n and from a sample above.
func DataBytes(n uint64) int64 {
	const sample = 1 << 14
	if n <= sample {
		var b int64
		for i := range n {
			b += int64(len(Key(i)) + ValueLen(i))
		}
		return b
	}
	var b int64
	step := n / sample
	for k := range uint64(sample) {
		i := k * step
		b += int64(len(Key(i)) + ValueLen(i))
	}
	return int64(float64(b) / sample * float64(n))
}

func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// Chooser picks key indexes. Not safe for concurrent use: each caller has
// its own.
type Chooser interface{ Next() uint64 }

// Distributions.
const (
	Uniform = "uniform"
	Zipfian = "zipfian"
)

// NewChooser returns a chooser of keys in [0, n) with distribution dist,
// seeded by seed.
func NewChooser(dist string, n uint64, seed uint64) (Chooser, error) {
	if n == 0 {
		return nil, fmt.Errorf("kvbench: no keys to choose from")
	}
	rng := rand.New(rand.NewPCG(seed, seed^0xda3e39cb94b95bdb))
	switch dist {
	case Uniform, "":
		return uniform{rng: rng, n: n}, nil
	case Zipfian:
		return newScrambledZipfian(rng, n), nil
	}
	return nil, fmt.Errorf("kvbench: unknown key distribution %q (uniform or zipfian)", dist)
}

type uniform struct {
	rng *rand.Rand
	n   uint64
}

func (u uniform) Next() uint64 { return u.rng.Uint64N(u.n) }

// zipfTheta is YCSB's zipfian constant.
const zipfTheta = 0.99

// scrambledZipfian is YCSB's ScrambledZipfianGenerator: a zipfian rank
// (Gray et al., "Quickly generating billion-record synthetic databases")
// hashed over the key space, so that the popular keys are scattered rather
// than the first ones.
type scrambledZipfian struct {
	rng               *rand.Rand
	n                 uint64
	alpha, zetan, eta float64
	half              float64 // 1 + 0.5^theta
}

func newScrambledZipfian(rng *rand.Rand, n uint64) *scrambledZipfian {
	z := &scrambledZipfian{rng: rng, n: n}
	zeta2 := zeta(2, zipfTheta)
	z.zetan = zetaCached(n)
	z.alpha = 1 / (1 - zipfTheta)
	z.eta = (1 - math.Pow(2/float64(n), 1-zipfTheta)) / (1 - zeta2/z.zetan)
	z.half = 1 + math.Pow(0.5, zipfTheta)
	return z
}

func zeta(n uint64, theta float64) float64 {
	var s float64
	for i := uint64(1); i <= n; i++ {
		s += 1 / math.Pow(float64(i), theta)
	}
	return s
}

// zetaCached computes zeta(n) once per n in a process (a million keys: a
// few milliseconds; callers ask for the same n).
func zetaCached(n uint64) float64 {
	zetaMu.Lock()
	defer zetaMu.Unlock()
	if v, ok := zetaMemo[n]; ok {
		return v
	}
	v := zeta(n, zipfTheta)
	zetaMemo[n] = v
	return v
}

func (z *scrambledZipfian) Next() uint64 {
	u := z.rng.Float64()
	uz := u * z.zetan
	var rank uint64
	switch {
	case uz < 1:
		rank = 0
	case uz < z.half:
		rank = 1
	default:
		rank = uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	}
	if rank >= z.n {
		rank = z.n - 1
	}
	return splitmix(rank) % z.n
}

var (
	zetaMu   sync.Mutex
	zetaMemo = map[uint64]float64{} // guarded by zetaMu
)
