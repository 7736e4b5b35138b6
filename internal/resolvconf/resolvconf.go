package resolvconf

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"strings"
)

// Config is what a resolv.conf says.
type Config struct {
	Servers, Searches, Options []string
}

// Parse reads nameserver, search/domain and options lines; comments
// (from # or ;) and other lines are ignored.
func Parse(b []byte) Config {
	var rc Config
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.Servers = append(rc.Servers, f[1])
		case "search", "domain":
			// The last search or domain line wins, as in the resolver.
			rc.Searches = append([]string(nil), f[1:]...)
		case "options":
			rc.Options = append(rc.Options, f[1:]...)
		}
	}
	return rc
}

// Files Host reads.
const (
	hostFile     = "/etc/resolv.conf"
	resolvedFile = "/run/systemd/resolve/resolv.conf"
)

// Host is the node's resolver configuration. When /etc/resolv.conf names
// only loopback servers (a local stub such as systemd-resolved's, which
// pods in their own network namespace cannot reach), the upstream servers
// from /run/systemd/resolve/resolv.conf are used, as kubeadm configures
// upstream's kubelet to.
func Host() Config { return host(hostFile, resolvedFile) }

func host(file, resolved string) Config {
	b, _ := os.ReadFile(file)
	rc := Parse(b)
	if onlyLoopback(rc.Servers) {
		if b, err := os.ReadFile(resolved); err == nil {
			if alt := Parse(b); len(alt.Servers) > 0 {
				return alt
			}
		}
	}
	return rc
}

// onlyLoopback reports whether servers is not empty and all of them are
// loopback addresses.
func onlyLoopback(servers []string) bool {
	for _, s := range servers {
		if a, err := netip.ParseAddr(s); err != nil || !a.IsLoopback() {
			return false
		}
	}
	return len(servers) > 0
}
