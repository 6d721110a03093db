package bufpool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ringstore/ringstore/ioengine"
)

// firstFixed is how much of an arena made without Options.Prefault New
// registers (Options.FixedBuffers); the rest is registered as the pool
// first takes its frames.
const firstFixed = 4 << 20

// fixedArena is a pool's arena registered with its engine's ring
// (Options.FixedBuffers), so that loads go as READ_FIXED. Registering
// memory pins its pages, faulting them in, so it holds the memory it
// covers for as long as it is registered. A prefaulted arena is registered
// whole at New. Otherwise New registers its first frames (firstFixed
// bytes), and each time the pool first takes a frame past the registered
// part (the free list hands frames out in arena order) as many frames
// again as are registered, on a goroutine of their own: the memory the
// pool holds grows with the frames it has used, at most twice over, and a
// large cache that is never filled is never pinned. Until its part is
// registered a frame is loaded with plain reads (the engine issues
// READ_FIXED only for buffers in registered memory), with the same bytes.
// A refused registration stops the growth; the frames registered before
// stay so.
type fixedArena struct {
	eng       *ioengine.Engine     // immutable
	arena     []byte               // immutable
	frameSize int                  // immutable
	logf      func(string, ...any) // immutable

	// target: frames [0, target) are registered, or being registered;
	// -1 once a registration was refused. Guarded by Pool.mu.
	target int
	wg     sync.WaitGroup // registrations in flight

	mu      sync.Mutex
	regions []*ioengine.Region // guarded by mu
	off     string             // guarded by mu: why (part of) the arena is not registered, "" if all went well
}

// newFixedArena registers the arena's first frames, all of them when
// whole (a prefaulted arena). It reports why nothing could be registered.
func newFixedArena(eng *ioengine.Engine, arena []byte, frameSize int, whole bool, logf func(string, ...any)) (*fixedArena, error) {
	fa := &fixedArena{eng: eng, arena: arena, frameSize: frameSize, logf: logf}
	frames := len(arena) / frameSize
	n := frames
	if !whole {
		n = min(frames, max(1, firstFixed/frameSize))
	}
	if err := fa.register(0, n); err != nil {
		return nil, err
	}
	fa.target = n
	return fa, nil
}

// register registers frames [from, to).
func (fa *fixedArena) register(from, to int) error {
	r, err := fa.eng.RegisterMemory(fa.arena[from*fa.frameSize : to*fa.frameSize])
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if err != nil {
		fa.off = fmt.Sprintf("frames %d to %d of %d not registered: %v", from, to, len(fa.arena)/fa.frameSize, err)
		return err
	}
	fa.regions = append(fa.regions, r)
	return nil
}

// usingLocked notes that the pool takes frame slot from its free list: past
// the registered part, it registers as many frames again (at least up to
// slot), unless a registration was refused. Pool.mu held.
func (fa *fixedArena) usingLocked(p *Pool, slot int) {
	if fa == nil || fa.target < 0 || slot < fa.target {
		return
	}
	from, to := fa.target, min(p.nframes, max(2*fa.target, slot+1))
	fa.target = to
	fa.wg.Add(1)
	go func() {
		defer fa.wg.Done()
		if err := fa.register(from, to); err != nil {
			p.mu.Lock()
			fa.target = -1
			p.mu.Unlock()
			if !errors.Is(err, ioengine.ErrClosed) {
				fa.logf("bufpool: frames %d to %d of the arena not registered with the engine, loads into them read without fixed buffers: %v", from, to, err)
			}
		}
	}()
}

// registered reports the bytes registered and why any are not.
func (fa *fixedArena) registered() (int64, string) {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	var n int64
	for _, r := range fa.regions {
		n += int64(r.Len())
	}
	return n, fa.off
}

// close waits for the registrations in flight and unregisters the arena,
// before it is unmapped: the kernel would keep its pages, and memory
// mapped later at the same address would not be what a fixed read fills.
func (fa *fixedArena) close() error {
	fa.wg.Wait()
	fa.mu.Lock()
	defer fa.mu.Unlock()
	var errs []error
	for _, r := range fa.regions {
		if err := r.Unregister(); err != nil {
			errs = append(errs, err)
		}
	}
	fa.regions = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bufpool: unregister the arena: %w", err)
	}
	return nil
}
