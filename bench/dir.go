package bench

import (
	"fmt"
	"os"

	"github.com/ringstore/ringstore/directio"
)

// CheckDir checks that dir is a directory a benchmark can use: it exists,
// is a directory, and, when direct is set, accepts O_DIRECT reads and writes
// (directio.Check). Errors start with what, the benchmark's name.
func CheckDir(what, dir string, direct bool) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", what, dir)
	}
	if direct {
		if _, err := directio.Check(dir); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}
