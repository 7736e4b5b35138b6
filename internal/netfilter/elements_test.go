package netfilter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/nftables/expr"
	"sigs.k8s.io/knftables"
)

// TestEncodeElement: the bytes of each type as nft writes them, parts
// padded to 4 bytes; what cannot be written is an error, not bytes.
// (internal/proxy's TestElementsOverNetlink checks them against nft's own
// listing, as root.)
func TestEncodeElement(t *testing.T) {
	el, err := EncodeElement(ElementChange{Set: "m", KeyType: "integer", Key: []string{"7"},
		ValueType: "ipv4_addr . inet_service", Value: []string{"10.42.0.5", "53"}})
	if err != nil || !bytes.Equal(el.Key, binary.NativeEndian.AppendUint32(nil, 7)) || !bytes.Equal(el.Val, []byte{10, 42, 0, 5, 0, 53, 0, 0}) {
		t.Fatalf("slot element: %v %x %x", err, el.Key, el.Val)
	}
	el, err = EncodeElement(ElementChange{Set: "s", KeyType: "ipv6_addr . inet_proto . inet_service", Key: []string{"fd00::1", "tcp", "8080"}})
	want := append(append([]byte{0xfd}, make([]byte, 14)...), 1, 6, 0, 0, 0, 0x1f, 0x90, 0, 0)
	if err != nil || !bytes.Equal(el.Key, want) || el.Val != nil {
		t.Fatalf("tuple element: %v %x, want %x", err, el.Key, want)
	}
	el, err = EncodeElement(ElementChange{Set: "v", KeyType: "ipv4_addr", Key: []string{"10.0.0.1"}, ValueType: "verdict", Value: []string{"goto ns-default"}})
	if err != nil || el.VerdictData == nil || el.VerdictData.Kind != expr.VerdictGoto || el.VerdictData.Chain != "ns-default" {
		t.Fatalf("verdict element: %v %+v", err, el.VerdictData)
	}
	for _, c := range []ElementChange{
		{Set: "a", KeyType: "ipv4_addr", Key: []string{"fd00::1"}},
		{Set: "b", KeyType: "ipv4_addr . inet_service", Key: []string{"10.0.0.1"}},
		{Set: "c", KeyType: "inet_service", Key: []string{"70000"}},
		{Set: "d", KeyType: "integer", Key: []string{"x"}},
		{Set: "e", KeyType: "ether_addr", Key: []string{"00:11:22:33:44:55"}},
		{Set: "f", KeyType: "ipv4_addr", Key: []string{"10.0.0.1"}, Value: []string{"accept"}},
		{Set: "g", KeyType: "ipv4_addr", Key: []string{"10.0.0.1"}, ValueType: "verdict", Value: []string{"goto"}},
	} {
		if _, err := EncodeElement(c); err == nil {
			t.Errorf("%+v encoded", c)
		}
	}
}

// TestRunChoosesTheWay: a transaction with anything but logged element
// changes runs with nft; one of logged element changes only goes over
// netlink (here to a table that does not exist: a netlink error, nothing
// through nft), unless there is no writer.
func TestRunChoosesTheWay(t *testing.T) {
	ctx := context.Background()
	fake := knftables.NewFake(knftables.IPv4Family, "plainkube-test-no-such-table")
	w := IPv4.NewElementWriter("plainkube-test-no-such-table")
	add := func(tx *knftables.Transaction, log *ElementLog, ip string) {
		log.Add(tx, ElementChange{Set: "s", KeyType: "ipv4_addr", Key: []string{ip}})
	}
	var log ElementLog
	tx := fake.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Add(&knftables.Set{Name: "s", Type: "ipv4_addr"})
	add(tx, &log, "10.0.0.1")
	if err := w.Run(ctx, fake, tx, &log); err != nil || len(log.Changes()) != 0 {
		t.Fatalf("a mixed transaction: %v, %d changes left in the log", err, len(log.Changes()))
	}
	tx = fake.NewTransaction()
	add(tx, &log, "10.0.0.2")
	if err := w.Run(ctx, fake, tx, &log); !errors.Is(err, ErrNetlink) {
		t.Fatalf("elements only, to a table that is not there: %v, want a netlink error", err)
	}
	tx = fake.NewTransaction()
	add(tx, &log, "10.0.0.3")
	if err := (*ElementWriter)(nil).Run(ctx, fake, tx, &log); err != nil {
		t.Fatal(err)
	}
	if got := len(fake.Table.Sets["s"].Elements); got != 2 {
		t.Fatalf("the fake's set holds %d elements, want 2 (10.0.0.1 and 10.0.0.3):\n%s", got, fake.Dump())
	}
}
