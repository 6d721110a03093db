package bench

import (
	"bytes"
	"fmt"
	"os/exec"
)

// RunFio runs fio (at path) with args and returns its standard output
// (the parsers skip warnings fio may print before its JSON). A failed run's
// error carries what fio printed on standard error.
func RunFio(path string, args []string) ([]byte, error) {
	cmd := exec.Command(path, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("fio: %v: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}
