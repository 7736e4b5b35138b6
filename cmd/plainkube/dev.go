package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"plainkube.dev/plainkube/internal/devcluster"
	"plainkube.dev/plainkube/internal/server"
)

const devUsage = `usage:
  plainkube dev cluster [--servers 1] [--agents N] [--dir D] [--subnet 10.250.X.0/24] [--dns-upstream IP:PORT]
                        make a cluster of 1+N hosts (network namespaces) on this machine and wait for every node Ready
  plainkube dev cluster down [--dir D]
                        remove it: processes, mounts, namespaces, links, nftables table, data (the logs stay)
  plainkube dev cluster load [--dir D] IMAGE.tar...
                        import images into every host's containerd`

// runDev runs 'plainkube dev cluster [down|load]'.
func runDev(args []string) error {
	if len(args) == 0 || args[0] != "cluster" {
		return errors.New(devUsage)
	}
	args = args[1:]
	verb := "up"
	if len(args) > 0 && (args[0] == "down" || args[0] == "load") {
		verb, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("dev cluster "+verb, flag.ExitOnError)
	fs.Usage = func() { fmt.Fprintln(os.Stderr, devUsage); fs.PrintDefaults() }
	dir := fs.String("dir", filepath.Join(server.DefaultDataDir(), "dev-cluster"), "directory of the cluster: state, admin.kubeconfig, each host's data and log")
	var o devcluster.Options
	var subnet string
	if verb == "up" {
		fs.IntVar(&o.Servers, "servers", 1, "servers (only 1 for now)")
		fs.IntVar(&o.Agents, "agents", 2, "agents joining the server, each a host of its own")
		fs.StringVar(&subnet, "subnet", "", "the hosts' network, IPv4 /24 or larger (default: a free /24 of 10.250.0.0/16 chosen from --dir)")
		fs.StringVar(&o.DNSUpstream, "dns-upstream", "", "ip:port the hosts' DNS answerers forward other names to (default "+devcluster.DefaultDNSUpstream+
			" in each host's namespace, where nothing listens: no query leaves the machine)")
		fs.DurationVar(&o.ReadyTimeout, "timeout", 60*time.Second, "how long to wait for every node to be Ready")
		fs.StringVar(&o.PodNetwork, "pod-network", "", "every host's --pod-network: host-gw (default) or vxlan")
	}
	fs.Parse(args)
	switch verb {
	case "down":
		if fs.NArg() > 0 {
			return errors.New(devUsage)
		}
		if err := devcluster.Down(*dir); err != nil {
			return err
		}
		fmt.Println("removed the cluster in", *dir)
		return nil
	case "load":
		if fs.NArg() == 0 {
			return errors.New(devUsage)
		}
		c, err := devcluster.Open(*dir)
		if err != nil {
			return err
		}
		return c.LoadImage(context.Background(), fs.Args()...)
	}
	if fs.NArg() > 0 {
		return errors.New(devUsage)
	}
	if o.Servers != 1 {
		return fmt.Errorf("dev cluster: --servers %d: only 1 server is supported for now", o.Servers)
	}
	if subnet != "" {
		p, err := netip.ParsePrefix(subnet)
		if err != nil {
			return fmt.Errorf("--subnet: %w", err)
		}
		o.Subnet = p
	}
	o.Dir = *dir
	o.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c, err := devcluster.Up(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("%d nodes Ready after %s:", len(c.Hosts), c.Took.Round(time.Millisecond))
	for _, h := range c.Hosts {
		fmt.Printf(" %s (%s)", h.NodeName, h.Addr)
	}
	fmt.Printf("\nuse it with: export KUBECONFIG=%s\nremove it with: %s dev cluster down --dir %s\n", c.Kubeconfig(), os.Args[0], c.Dir)
	return nil
}
