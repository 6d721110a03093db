package bench

import (
	"bytes"
	"fmt"
	"os/exec"
)

// RunFio runs fio (at path) with args and returns its standard output,
// from its JSON document on (fio may print warnings before it). A failed
// run's error carries what fio printed on standard error.
func RunFio(path string, args []string) ([]byte, error) {
	cmd := exec.Command(path, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("fio: %v: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	data := out.Bytes()
	if i := bytes.IndexByte(data, '{'); i > 0 {
		data = data[i:]
	}
	return data, nil
}
