package proxy

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"

	"plainkube.dev/plainkube/internal/netfilter"
)

// TestElementsOverNetlink (root, real nftables): after a full write with
// nft, an endpoint replaced in a pool of the same size is a transaction
// of element changes only, all logged, and the element writer puts them
// in the kernel over netlink so that nft lists exactly what an nft
// transaction would have made, in both families.
func TestElementsOverNetlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed")
	}
	for _, c := range []struct {
		fam              family
		node             *Node
		clusterIP        string
		keep, old, fresh string
		addrType         discoveryv1.AddressType
	}{
		{ipv4, testNode, "10.96.0.40", "10.42.0.5", "10.42.0.6", "10.42.0.9", discoveryv1.AddressTypeIPv4},
		{ipv6, &Node{Name: "n1", Addresses: []netip.Addr{netip.MustParseAddr("2001:db8::10")},
			PodCIDR: netip.MustParsePrefix("fd00:42::/64"), ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("fd00:96::/108")}},
			"fd00:96::40", "fd00:42::5", "fd00:42::6", "fd00:42::9", discoveryv1.AddressTypeIPv6},
	} {
		t.Run(c.fam.IP, func(t *testing.T) {
			name := "plainkube-test-elements"
			nft, err := knftables.New(c.fam.NFT, name)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			defer RemoveTables(ctx, name)
			svc := service("web", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = c.clusterIP, []string{c.clusterIP} })
			render := func(ips ...string) serviceRules {
				sl := slice("web", 8080)
				sl.AddressType = c.addrType
				for _, ip := range ips {
					sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr("n1"),
						Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
				}
				return c.fam.render(svc, servicePorts(svc, []*discoveryv1.EndpointSlice{sl}, c.node, c.fam.Is6), c.node, func(hostPort) bool { return false })
			}
			st := newTableState(c.fam)
			w := c.fam.NewElementWriter(name)
			tx := nft.NewTransaction()
			st.full(tx, c.node, map[string]serviceRules{"default/web": render(c.keep, c.old)}, nil)
			if err := w.Run(ctx, nft, tx, &st.log); err != nil {
				t.Fatalf("full write: %v\n%s", err, tx)
			}

			tx = nft.NewTransaction()
			st.update(tx, "default/web", render(c.keep, c.fresh))
			if n := tx.NumOperations(); n != 4 || len(st.log.Changes()) != 4 { // its slot and its hairpin pair, each out and in
				t.Fatalf("an endpoint replaced in a pool of the same size: %d operations, %d of them over netlink, want 4 of 4:\n%s", n, len(st.log.Changes()), tx)
			}
			// nft here is a fake: only netlink can change the table.
			if err := w.Run(ctx, knftables.NewFake(c.fam.NFT, name), tx, &st.log); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("nft", "list", "table", c.fam.IP, name).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			list := string(out)
			for _, want := range []string{"0 : " + c.keep + " . 8080", "1 : " + c.fresh + " . 8080", c.fresh + " . " + c.fresh, c.keep + " . " + c.keep} {
				if !strings.Contains(list, want) {
					t.Errorf("the table lacks %q:\n%s", want, list)
				}
			}
			if strings.Contains(list, c.old) {
				t.Errorf("the table still holds the replaced endpoint %s:\n%s", c.old, list)
			}
			// A batch that deletes what is not there fails whole.
			if err := w.Write([]netfilter.ElementChange{c.fam.elementChange(element{container: hairpinSet, key: c.keep + " . " + c.keep}, true),
				c.fam.elementChange(element{container: hairpinSet, key: c.old + " . " + c.old}, true)}); !errors.Is(err, netfilter.ErrNetlink) {
				t.Errorf("deleting an element that is not there: %v", err)
			}
			if out, _ := exec.Command("nft", "list", "set", c.fam.IP, name, hairpinSet).CombinedOutput(); !strings.Contains(string(out), c.keep+" . "+c.keep) {
				t.Errorf("a failed batch changed the set:\n%s", out)
			}
		})
	}
}
