package mounts

import (
	"os"
	"path/filepath"
	"strings"
)

// Under lists the mount points below dir (not dir itself), in the order
// they were mounted: unmount them last first.
func Under(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], abs+"/") {
			out = append(out, f[4])
		}
	}
	return out, nil
}
