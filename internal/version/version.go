package version

import (
	"fmt"
	"runtime"
)

// Kubernetes is the upstream release whose API plainkube serves.
const (
	Major = "1"
	Minor = "37"
	Patch = "2"
)

// Plainkube is bumped with each plainkube release of the same API version.
const Plainkube = "0"

// GitVersion is the semver string clients read, e.g. v1.37.2-plainkube.0.
func GitVersion() string {
	return fmt.Sprintf("v%s.%s.%s-plainkube.%s", Major, Minor, Patch, Plainkube)
}

// GitCommit may be set at link time (-ldflags -X).
var GitCommit = "unknown"

// Platform is os/arch.
func Platform() string { return runtime.GOOS + "/" + runtime.GOARCH }
