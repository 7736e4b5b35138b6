package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"plainkube.dev/plainkube/internal/devcluster"
)

// runDevCluster times 'plainkube dev cluster': a server and o.Agents
// agents, each a network namespace of this machine, from the start to
// every node Ready, and the removal after; --repeat times, each in a fresh
// directory. It runs this binary and needs root.
func runDevCluster(ctx context.Context, o *Options, r *Result) error {
	self, err := devClusterBinary("devcluster")
	if err != nil {
		return err
	}
	repeat := o.Repeat
	if repeat <= 0 {
		repeat = 3
	}
	agents := o.Agents
	if agents <= 0 {
		agents = 2
	}
	var up, down latencies
	for i := 0; i < repeat; i++ {
		dir, err := os.MkdirTemp("", "plainkube-bench-devcluster-")
		if err != nil {
			return err
		}
		c, err := devcluster.Up(ctx, devcluster.Options{Dir: dir, Agents: agents, Binary: self})
		if err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		up = append(up, c.Took)
		start := time.Now()
		err = c.Down()
		down = append(down, time.Since(start))
		if err != nil {
			return fmt.Errorf("run %d: down: %w (its logs are in %s)", i+1, err, dir)
		}
		os.RemoveAll(dir)
		o.progress("devcluster: run %d of %d: %d nodes Ready after %s", i+1, repeat, agents+1, c.Took.Round(time.Millisecond))
	}
	r.add("hosts", float64(agents+1), "count")
	r.add("all_ready_min", up.percentile(0), "ms")
	r.add("all_ready_median", up.percentile(0.5), "ms")
	r.add("all_ready_max", up.percentile(1), "ms")
	r.add("down_median", down.percentile(0.5), "ms")
	return nil
}

// devClusterBinary is the binary a workload's dev clusters run (this
// one); making them needs root.
func devClusterBinary(workload string) (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s needs root (it makes network namespaces)", workload)
	}
	return os.Executable()
}
