package devcluster

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestClusterID(t *testing.T) {
	a, err := ClusterID("/tmp/one")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ClusterID("/tmp/../tmp/one/")
	b, _ := ClusterID("/tmp/two")
	if len(a) != 6 || a != again || a == b {
		t.Fatalf("ids %q %q %q: want 6 hex digits, the same for one directory, different for another", a, again, b)
	}
}

func TestChooseSubnet(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		name string
		id   string
		used []netip.Prefix
		want string
	}{
		{"the id's first byte", "1a2b3c", nil, "10.250.26.0/24"},
		{"a default route is no conflict", "1a2b3c", []netip.Prefix{p("0.0.0.0/0")}, "10.250.26.0/24"},
		{"a taken /24 is skipped", "1a2b3c", []netip.Prefix{p("10.250.26.0/24"), p("10.250.27.128/25")}, "10.250.28.0/24"},
		{"wraps past 255", "ff0000", []netip.Prefix{p("10.250.255.0/24")}, "10.250.0.0/24"},
		{"a wider route counts", "1a2b3c", []netip.Prefix{p("10.250.0.0/16")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseSubnet(tc.id, tc.used)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %s, want an error", got)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("got %s %v, want %s", got, err, tc.want)
			}
		})
	}
}

func TestNewLayout(t *testing.T) {
	dir := "/tmp/devcluster-layout"
	id, _ := ClusterID(dir)
	l, err := NewLayout(dir, 2, netip.MustParsePrefix("10.250.7.0/24"), "/bin/plainkube")
	if err != nil {
		t.Fatal(err)
	}
	if l.Bridge != "pk-"+id || l.Table != "pk-"+id || l.Gateway.String() != "10.250.7.1" {
		t.Fatalf("bridge %s table %s gateway %s", l.Bridge, l.Table, l.Gateway)
	}
	type short struct{ name, node, netns, addr, data string }
	var got []short
	for _, h := range l.Hosts {
		got = append(got, short{h.Name, h.NodeName, h.Netns, h.Addr.String(), h.DataDir})
		if len(h.Veth) > 15 {
			t.Errorf("link name %q is longer than an interface name may be", h.Veth)
		}
		if !ownsName(id, h.Netns) || ownsName("000000", h.Netns) {
			t.Errorf("ownsName(%s) is wrong", h.Netns)
		}
	}
	want := []short{
		{"s0", "server0", "pk-" + id + "-s0", "10.250.7.10", dir + "/s0"},
		{"a1", "agent1", "pk-" + id + "-a1", "10.250.7.11", dir + "/a1"},
		{"a2", "agent2", "pk-" + id + "-a2", "10.250.7.12", dir + "/a2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hosts %+v\nwant %+v", got, want)
	}
	if !l.Hosts[0].Server || l.Hosts[1].Server || l.ServerURL() != "https://10.250.7.10:6443" {
		t.Fatalf("server %+v url %s", l.Hosts[0], l.ServerURL())
	}
	if h, ok := l.Host("agent2"); !ok || h.Name != "a2" {
		t.Fatalf("Host(agent2) = %+v %v", h, ok)
	}
	last, err := NewLayout(dir, MaxAgents, netip.MustParsePrefix("10.250.7.0/24"), "")
	if err != nil || last.Hosts[MaxAgents].Addr.String() != "10.250.7.210" || len(last.Hosts[MaxAgents].Veth) > 15 {
		t.Fatalf("%d agents: %v", MaxAgents, err)
	}
	for _, bad := range []struct {
		agents int
		subnet string
	}{{-1, "10.250.7.0/24"}, {MaxAgents + 1, "10.250.7.0/24"}, {2, "10.250.7.0/25"}, {2, "10.250.7.5/24"}, {2, "fd00::/64"}} {
		if _, err := NewLayout(dir, bad.agents, netip.MustParsePrefix(bad.subnet), ""); err == nil {
			t.Errorf("NewLayout(%d agents, %s) made a layout", bad.agents, bad.subnet)
		}
	}
}

func TestState(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadState(dir); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("ReadState of an empty directory: %v", err)
	}
	l, err := NewLayout(dir, 1, netip.MustParsePrefix("10.250.9.0/24"), "/usr/bin/plainkube")
	if err != nil {
		t.Fatal(err)
	}
	l.Hosts[1].PID, l.Hosts[1].Start = 1234, 99
	if err := l.writeState(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Fatalf("read back %+v\nwant %+v", got, l)
	}
	// A state file copied from another directory is not this one's.
	other := t.TempDir()
	b, _ := os.ReadFile(filepath.Join(dir, stateFile))
	os.WriteFile(filepath.Join(other, stateFile), b, 0o600)
	if _, err := ReadState(other); err == nil {
		t.Fatal("ReadState took another directory's state file")
	}
}

func TestParseStat(t *testing.T) {
	// The command may hold spaces and parentheses.
	stat := "4242 (my (odd) cmd) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 123456 1000 10 18446744073709551615"
	ppid, zombie, start, err := parseStat(stat)
	if err != nil || ppid != 17 || zombie || start != 123456 {
		t.Fatalf("parseStat = %d %v %d %v", ppid, zombie, start, err)
	}
	if _, zombie, _, _ := parseStat("7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0 0"); !zombie {
		t.Fatal("state Z is not a zombie")
	}
	if _, _, _, err := parseStat("7 (x) S 1"); err == nil {
		t.Fatal("a short stat parsed")
	}
}

func TestSelectProcs(t *testing.T) {
	hostNS, podNS, other := nsID{4, 100}, nsID{4, 101}, nsID{4, 1}
	self := os.Getpid()
	procs := map[int]proc{
		1:    {ppid: 0, netns: other},
		10:   {ppid: 1, start: 500, netns: other},  // the recorded server (matched by pid and start time)
		11:   {ppid: 10, start: 510, netns: other}, // its child
		20:   {ppid: 1, start: 600, netns: hostNS}, // a shim in the host's namespace
		21:   {ppid: 20, start: 610, netns: podNS}, // its container
		30:   {ppid: 1, start: 700, netns: podNS},  // a container whose shim is gone
		40:   {ppid: 1, start: 800, netns: other},  // a stranger that reused a recorded pid
		50:   {ppid: 1, start: 900, netns: other},  // a stranger
		60:   {ppid: 1, netns: hostNS},             // this process's parent, though in the host's namespace
		self: {ppid: 60, netns: hostNS},            // this process, though in the host's namespace
	}
	recorded := map[int]uint64{10: 500, 40: 1}
	got := selectProcs(procs, recorded, []nsID{hostNS, podNS})
	if want := []int{10, 11, 20, 21, 30}; !reflect.DeepEqual(got, want) {
		t.Fatalf("selected %v, want %v", got, want)
	}
}
