package devcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// The addresses the harness owns: every cluster's /24 is one of this
// range, chosen from the hash of its directory.
var ownRange = netip.MustParsePrefix("10.250.0.0/16")

// firstHostOctet is the last octet of the first host's address (s0); the
// bridge holds .1.
const firstHostOctet = 10

// MaxAgents is how many agents one /24 has room for.
const MaxAgents = 200

// stateFile is the file in the cluster's directory that Down reads.
const stateFile = "devcluster.json"

// Host is one host of the cluster: a network namespace joined to the
// cluster's bridge, and the plainkube process that runs in it.
type Host struct {
	// Name is the host's short name: s0 for the server, a1, a2, … for
	// the agents. Its data directory, log and namespace are named after it.
	Name string `json:"name"`
	// Server: the host runs 'plainkube server' (else 'plainkube agent').
	Server bool `json:"server,omitempty"`
	// NodeName is the name of the host's Node (server0, agent1, …).
	NodeName string `json:"nodeName"`
	// Netns is the name of the host's network namespace (/run/netns/…).
	Netns string `json:"netns"`
	// Veth is the host-side end of the host's veth pair, a port of the
	// bridge; the other end is eth0 in the namespace.
	Veth string `json:"veth"`
	// Addr is eth0's address.
	Addr netip.Addr `json:"addr"`
	// DataDir is the --data-dir of the host's plainkube, Log its output.
	DataDir string `json:"dataDir"`
	Log     string `json:"log"`
	// PID and Start (the process's start time in clock ticks since boot,
	// /proc/PID/stat field 22) identify the plainkube process once it runs.
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
}

// Layout is everything a cluster's names and addresses are: derived from
// its directory (and the subnet chosen for it), written to the state file
// before anything is made, so that Down finds all of it.
type Layout struct {
	Dir string `json:"dir"`
	// ID is the hash of Dir that every name on the host carries: pk-ID.
	ID string `json:"id"`
	// Bridge is the host's Linux bridge joining the namespaces; it holds
	// Gateway, the namespaces' default route.
	Bridge  string       `json:"bridge"`
	Subnet  netip.Prefix `json:"subnet"`
	Gateway netip.Addr   `json:"gateway"`
	// Table is the host's nftables table (family inet) that keeps the
	// bridge's traffic on the machine.
	Table string `json:"table"`
	// Binary is the plainkube the hosts run.
	Binary string `json:"binary"`
	Hosts  []Host `json:"hosts"`
}

// ClusterID is the short hash of dir (made absolute) that names a
// cluster's namespaces, links and table: two directories never share one
// (but for a 1 in 2^24 chance, which Up detects: the names exist).
func ClusterID(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:3]), nil
}

// prefix is what every name of the cluster on the host starts with.
func prefix(id string) string { return "pk-" + id }

// ChooseSubnet picks the cluster's /24: the one of 10.250.0.0/16 that the
// id's first byte names, else the next one that overlaps none of used
// (the host's addresses and routes).
func ChooseSubnet(id string, used []netip.Prefix) (netip.Prefix, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) == 0 {
		return netip.Prefix{}, fmt.Errorf("devcluster: bad cluster id %q", id)
	}
	base := ownRange.Addr().As4()
	for i := 0; i < 256; i++ {
		base[2] = b[0] + byte(i)
		p := netip.PrefixFrom(netip.AddrFrom4(base), 24)
		if !overlapsAny(p, used) {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("devcluster: every /24 of %s is in use on this host", ownRange)
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Bits() > 0 && p.Overlaps(u) { // a default route overlaps everything
			return true
		}
	}
	return false
}

// NewLayout names the hosts of a cluster of one server and agents agents
// in dir, on subnet.
func NewLayout(dir string, agents int, subnet netip.Prefix, binary string) (*Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	id, err := ClusterID(abs)
	if err != nil {
		return nil, err
	}
	if agents < 0 || agents > MaxAgents {
		return nil, fmt.Errorf("devcluster: --agents %d: from 0 to %d", agents, MaxAgents)
	}
	if !subnet.Addr().Is4() || subnet.Bits() > 24 || subnet != subnet.Masked() {
		return nil, fmt.Errorf("devcluster: subnet %s: an IPv4 network of /24 or larger is needed", subnet)
	}
	gw := subnet.Addr().Next()
	l := &Layout{Dir: abs, ID: id, Bridge: prefix(id), Subnet: subnet, Gateway: gw, Table: prefix(id), Binary: binary}
	addr := subnet.Addr()
	for i := 0; i < firstHostOctet; i++ {
		addr = addr.Next()
	}
	for i := 0; i <= agents; i++ {
		h := Host{Name: fmt.Sprintf("a%d", i), NodeName: fmt.Sprintf("agent%d", i)}
		if i == 0 {
			h = Host{Name: "s0", Server: true, NodeName: "server0"}
		}
		h.Netns = prefix(id) + "-" + h.Name
		h.Veth = h.Netns // at most 13 characters: an interface name has 15
		h.Addr = addr
		h.DataDir = filepath.Join(abs, h.Name)
		h.Log = filepath.Join(abs, h.Name+".log")
		l.Hosts = append(l.Hosts, h)
		addr = addr.Next()
	}
	return l, nil
}

// Server is the host that runs the server.
func (l *Layout) Server() *Host { return &l.Hosts[0] }

// ServerURL is the API server's URL, reachable from the host and from
// every namespace.
func (l *Layout) ServerURL() string {
	return "https://" + netip.AddrPortFrom(l.Server().Addr, 6443).String()
}

// Kubeconfig is the admin kubeconfig Up writes, whose server is ServerURL.
func (l *Layout) Kubeconfig() string { return filepath.Join(l.Dir, "admin.kubeconfig") }

// Host returns the host of that name (s0, a1, …) or node name.
func (l *Layout) Host(name string) (*Host, bool) {
	for i := range l.Hosts {
		if l.Hosts[i].Name == name || l.Hosts[i].NodeName == name {
			return &l.Hosts[i], true
		}
	}
	return nil, false
}

// ownsName says whether a namespace or link name is one of the cluster's:
// the bridge pk-ID or pk-ID-<host>.
func ownsName(id, name string) bool {
	return name == prefix(id) || strings.HasPrefix(name, prefix(id)+"-")
}

func statePath(dir string) string { return filepath.Join(dir, stateFile) }

// writeState writes the layout to dir's state file.
func (l *Layout) writeState() error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(l.Dir) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(l.Dir))
}

// ErrNoCluster is what ReadState answers for a directory without a state file.
var ErrNoCluster = errors.New("devcluster: no cluster in this directory")

// ReadState reads the layout a cluster in dir was made with.
func ReadState(dir string) (*Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(statePath(abs))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoCluster, abs)
	}
	if err != nil {
		return nil, err
	}
	var l Layout
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("devcluster: %s: %w", statePath(abs), err)
	}
	if l.Dir != abs {
		return nil, fmt.Errorf("devcluster: %s describes a cluster in %s, not this directory", statePath(abs), l.Dir)
	}
	return &l, nil
}
