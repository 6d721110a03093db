package bench

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/buildinfo"
)

// Machine records where a benchmark ran.
type Machine struct {
	Kernel      string `json:"kernel"`
	Arch        string `json:"arch"`
	CPUs        int    `json:"cpus"`
	MemoryBytes uint64 `json:"memory_bytes"`
	GoVersion   string `json:"go_version"`
	Commit      string `json:"commit"`
	Dir         string `json:"dir"`
	FileSystem  string `json:"file_system"`
	Device      string `json:"device,omitempty"`
}

// DescribeMachine records the machine and the file system holding dir.
func DescribeMachine(dir string) Machine {
	m := Machine{
		Kernel:      kernelRelease(),
		Arch:        runtime.GOARCH,
		CPUs:        runtime.NumCPU(),
		MemoryBytes: totalMemory(),
		GoVersion:   runtime.Version(),
		Commit:      commit(),
		Dir:         dir,
	}
	if fs, err := directio.FSType(dir); err == nil {
		m.FileSystem = fs
	}
	m.Device = blockDevice(dir)
	return m
}

func commit() string { return buildinfo.Read().Commit }

// blockDevice names the device under dir from /proc/self/mountinfo, best
// effort.
func blockDevice(dir string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	best, dev := "", ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		mnt := f[4]
		if (dir == mnt || strings.HasPrefix(dir, strings.TrimSuffix(mnt, "/")+"/") || mnt == "/") && len(mnt) > len(best) {
			for i := 6; i < len(f)-2; i++ {
				if f[i] == "-" {
					best, dev = mnt, f[i+2]
					break
				}
			}
		}
	}
	return dev
}

// ModuleVersions returns the version, from this binary's build info, of
// each of the named modules it was built with (the peers' programs report
// theirs this way); a module the binary does not hold is left out.
func ModuleVersions(paths []string) map[string]string {
	v := map[string]string{}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, p := range paths {
		for _, d := range info.Deps {
			if d.Path == p {
				v[d.Path] = d.Version
			}
		}
	}
	return v
}
