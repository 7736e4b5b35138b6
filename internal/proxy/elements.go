package proxy

import (
	"strings"

	"plainkube.dev/plainkube/internal/netfilter"
)

// The endpoint changes of a sync — an endpoint replaced in a pool of the
// same size, its hairpin pair with it — touch only elements of the
// endpoint-slots maps and the hairpin-pairs set. Those go to the kernel
// over netlink (netfilter.ElementWriter) rather than through nft, which
// reads the whole table before each transaction.

// byNetlink says whether element e's container is one whose changes go
// over netlink: the endpoint-slots maps and the hairpin-pairs set.
func byNetlink(e element) bool {
	return strings.HasPrefix(e.container, endpointSlotsPrefix) || e.container == hairpinSet
}

// elementChange is e added or deleted, with the types of the family's
// endpoint-slots maps (slot → address . port) and hairpin-pairs set
// (address . address).
func (f family) elementChange(e element, delete bool) netfilter.ElementChange {
	c := netfilter.ElementChange{Delete: delete, Set: e.container, Key: strings.Split(e.key, " . ")}
	if strings.HasPrefix(e.container, endpointSlotsPrefix) {
		c.KeyType, c.ValueType, c.Value = "integer", f.AddrType+" . inet_service", strings.Split(e.value, " . ")
	} else {
		c.KeyType = f.AddrType + " . " + f.AddrType
	}
	return c
}
