package auth

import "strings"

// Node identities, as upstream (the Node authorizer is package node).
const (
	GroupNodes     = "system:nodes"
	NodeUserPrefix = "system:node:"
)

// NodeName returns the node an identity is (system:node:<name> in
// system:nodes), or "".
func NodeName(u *User) string {
	if u == nil || !u.InGroup(GroupNodes) {
		return ""
	}
	name, ok := strings.CutPrefix(u.Name, NodeUserPrefix)
	if !ok {
		return ""
	}
	return name
}
