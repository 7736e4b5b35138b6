package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// Image runs 'plainkube image VERB --data-dir HOST ARGS...' for every host
// at once: each host's containerd has a content store of its own (its
// data directory's), reached through its socket from the machine, so an
// image is built or loaded into each. Say Image(ctx, "load", "app.tar") or
// Image(ctx, "build", "--tag", "busybox:dev", "--binary", "/bin/busybox").
func (c *Cluster) Image(ctx context.Context, verb string, args ...string) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, h := range c.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			argv := append([]string{"image", verb, "--data-dir", h.DataDir}, args...)
			if out, err := exec.CommandContext(ctx, c.Binary, argv...).CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("host %s: plainkube %s: %v: %s", h.Name, strings.Join(argv, " "), err, strings.TrimSpace(string(out))))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// LoadImage imports image archives (docker save or OCI layout tarballs)
// into every host's containerd.
func (c *Cluster) LoadImage(ctx context.Context, tars ...string) error {
	return c.Image(ctx, "load", tars...)
}
