package netfilter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"sigs.k8s.io/knftables"
)

// nft (which knftables runs) reads the table before each transaction: with
// thousands of chains and sets that is a tenth of a second and more, for
// a change of one element. Element changes alone can go to the kernel
// over netlink instead, in one batch, which the kernel applies atomically
// as it does an nft transaction; ElementWriter does that.

// ElementChange adds or deletes one element of a named set or map.
type ElementChange struct {
	Delete bool
	// Set is the set's or the map's name.
	Set string
	// KeyType and ValueType are the set's types, parts joined by " . "
	// as nft writes them: ipv4_addr, ipv6_addr, inet_proto, inet_service,
	// integer (32 bits in host order, what numgen gives), and verdict for
	// a value. ValueType is "" for a set.
	KeyType, ValueType string
	// Key and Value are the element's parts, as nft writes them (a
	// deletion needs no value).
	Key, Value []string
}

// ErrNetlink is in the errors of ElementWriter when the kernel refused
// the batch or could not be reached.
var ErrNetlink = errors.New("netlink")

// ElementLog mirrors the element changes added to a knftables
// transaction, so that a transaction of nothing else can be written over
// netlink instead (ElementWriter.Run).
type ElementLog struct {
	changes []ElementChange
}

// Add adds c to tx and to the log.
func (l *ElementLog) Add(tx *knftables.Transaction, c ElementChange) {
	if c.Delete {
		tx.Delete(c.knftables())
	} else {
		tx.Add(c.knftables())
	}
	l.changes = append(l.changes, c)
}

// Changes are the changes logged.
func (l *ElementLog) Changes() []ElementChange { return l.changes }

// Reset forgets the changes logged.
func (l *ElementLog) Reset() { l.changes = nil }

func (c ElementChange) knftables() *knftables.Element {
	e := &knftables.Element{Key: c.Key}
	if c.ValueType == "" {
		e.Set = c.Set
	} else {
		e.Map, e.Value = c.Set, c.Value
	}
	return e
}

// Run runs tx: over netlink when all it holds are the element changes in
// log (the transaction's other operations were not logged), else with
// nft. The log is reset either way. A nil writer always runs nft.
func (w *ElementWriter) Run(ctx context.Context, nft knftables.Interface, tx *knftables.Transaction, log *ElementLog) error {
	changes := log.changes
	log.Reset()
	if w != nil && len(changes) > 0 && tx.NumOperations() == len(changes) {
		return w.Write(changes)
	}
	return nft.Run(ctx, tx)
}

// ElementWriter writes element changes to one table over netlink, in the
// network namespace of the calling process.
type ElementWriter struct {
	table *nftables.Table
}

// NewElementWriter writes to the family's table named table.
func (f Family) NewElementWriter(table string) *ElementWriter {
	tf := nftables.TableFamilyIPv4
	if f.Is6 {
		tf = nftables.TableFamilyIPv6
	}
	return &ElementWriter{table: &nftables.Table{Name: table, Family: tf}}
}

// Write applies changes, in order, as one batch: all or none.
func (w *ElementWriter) Write(changes []ElementChange) error {
	if len(changes) == 0 {
		return nil
	}
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNetlink, err)
	}
	for _, c := range changes {
		el, err := EncodeElement(c)
		if err != nil {
			return err
		}
		set := &nftables.Set{Table: w.table, Name: c.Set}
		if c.Delete {
			err = conn.SetDeleteElements(set, []nftables.SetElement{el})
		} else {
			err = conn.SetAddElements(set, []nftables.SetElement{el})
		}
		if err != nil {
			return err
		}
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("%w: %d element changes of table %s: %v", ErrNetlink, len(changes), w.table.Name, err)
	}
	return nil
}

// EncodeElement turns c's key and value into the bytes the kernel keeps,
// as nft would: addresses, protocols and ports in network order, integers
// in host order, each part of a concatenation padded to a multiple of 4
// bytes; a verdict value becomes the element's verdict.
func EncodeElement(c ElementChange) (nftables.SetElement, error) {
	key, err := encodeParts(c.KeyType, c.Key)
	if err != nil {
		return nftables.SetElement{}, fmt.Errorf("element %q of %s: %w", strings.Join(c.Key, " . "), c.Set, err)
	}
	el := nftables.SetElement{Key: key}
	switch {
	case c.Delete: // the key names the element
	case c.ValueType == "":
		if len(c.Value) > 0 {
			return el, fmt.Errorf("element %q of %s: a value for a set", strings.Join(c.Key, " . "), c.Set)
		}
	case c.ValueType == "verdict":
		if el.VerdictData, err = verdict(c.Value); err != nil {
			return el, fmt.Errorf("element %q of %s: %w", strings.Join(c.Key, " . "), c.Set, err)
		}
	default:
		if el.Val, err = encodeParts(c.ValueType, c.Value); err != nil {
			return el, fmt.Errorf("element %q of %s: value: %w", strings.Join(c.Key, " . "), c.Set, err)
		}
	}
	return el, nil
}

func encodeParts(typ string, parts []string) ([]byte, error) {
	types := strings.Split(typ, " . ")
	if len(types) != len(parts) {
		return nil, fmt.Errorf("%d parts for type %s", len(parts), typ)
	}
	var out []byte
	for i, t := range types {
		b, err := encodePart(strings.TrimSpace(t), parts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
	}
	return out, nil
}

func encodePart(typ, s string) ([]byte, error) {
	switch typ {
	case "ipv4_addr", "ipv6_addr":
		a, err := netip.ParseAddr(s)
		if err != nil || a.Is6() != (typ == "ipv6_addr") || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an %s", s, typ)
		}
		return a.AsSlice(), nil
	case "inet_service":
		p, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%q is not a port", s)
		}
		return binary.BigEndian.AppendUint16(nil, uint16(p)), nil
	case "inet_proto":
		if n, ok := protocolNumbers[s]; ok {
			return []byte{n}, nil
		}
		n, err := strconv.ParseUint(s, 10, 8)
		if err != nil {
			return nil, fmt.Errorf("%q is not a protocol", s)
		}
		return []byte{byte(n)}, nil
	case "integer":
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a 32-bit integer", s)
		}
		return binary.NativeEndian.AppendUint32(nil, uint32(n)), nil
	}
	return nil, fmt.Errorf("type %s is not written over netlink", typ)
}

var protocolNumbers = map[string]byte{"icmp": 1, "tcp": 6, "udp": 17, "ipv6-icmp": 58, "icmpv6": 58, "sctp": 132}

func verdict(v []string) (*expr.Verdict, error) {
	if len(v) != 1 {
		return nil, fmt.Errorf("verdict %q", v)
	}
	word, chain, _ := strings.Cut(strings.TrimSpace(v[0]), " ")
	switch word {
	case "accept":
		return &expr.Verdict{Kind: expr.VerdictAccept}, nil
	case "drop":
		return &expr.Verdict{Kind: expr.VerdictDrop}, nil
	case "return":
		return &expr.Verdict{Kind: expr.VerdictReturn}, nil
	case "goto", "jump":
		if chain == "" {
			return nil, fmt.Errorf("verdict %q without a chain", v[0])
		}
		kind := expr.VerdictGoto
		if word == "jump" {
			kind = expr.VerdictJump
		}
		return &expr.Verdict{Kind: kind, Chain: chain}, nil
	}
	return nil, fmt.Errorf("verdict %q", v[0])
}
