package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progressBar draws one line with a bar, the trials done and an estimate
// of the time left, redrawn in place after every trial — on a terminal
// only. Elsewhere (a log, a pipe) Run writes one line per trial instead.
type progressBar struct {
	w      io.Writer
	total  int
	done   int
	start  time.Time
	active bool // w is a terminal
}

func newProgressBar(w io.Writer, total int) *progressBar {
	p := &progressBar{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.active = true
	}
	return p
}

// step records a finished trial of mode and redraws the bar.
func (p *progressBar) step(mode string) {
	p.done++
	if !p.active {
		return
	}
	const width = 30
	filled := width * p.done / max(1, p.total)
	eta := "?"
	if p.done > 0 {
		left := time.Duration(float64(time.Since(p.start)) / float64(p.done) * float64(p.total-p.done))
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d trials, ETA %s (last: %s)", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, eta, mode)
	if p.done == p.total {
		fmt.Fprintln(p.w)
	}
}

// line writes a line above the bar (or, off a terminal, just the line).
func (p *progressBar) line(format string, args ...any) {
	if p.active {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format, args...)
}
