package auth

import "context"

// Attributes describe one request to authorize.
type Attributes struct {
	User        *User
	Verb        string
	IsResource  bool
	Path        string // for non-resource requests
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	// Name is the object's name; for a list or watch, the one its
	// fieldSelector metadata.name=… requires, as upstream.
	Name string
	// FieldSelector is a list's, watch's or deletecollection's field
	// selector, unparsed: the Node authorizer allows a node's list of
	// pods only with spec.nodeName=<node>.
	FieldSelector string
	// LabelSelector is a list's, watch's or deletecollection's label
	// selector, unparsed (upstream's authorizer attributes carry it too):
	// the Node authorizer allows a node's list of PersistentVolumes only
	// with plainkube.dev/local-path-node=<node>.
	LabelSelector string
}

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion: this authorizer neither allows nor denies.
	NoOpinion Decision = iota
	Allow
	Deny
)

// Authorizer decides whether a request may proceed. reason explains a
// denial or no-opinion and is shown to the client.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// MastersAuthorizer allows everything to members of system:masters (the
// cluster admin), as upstream's authorizer chain does before RBAC, and has no
// opinion about anyone else.
type MastersAuthorizer struct{}

func (MastersAuthorizer) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User != nil && a.User.InGroup(GroupMasters) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

// PublicInfoAuthorizer allows anyone, authenticated or not, to read the
// health and version endpoints (upstream's system:public-info-viewer role).
type PublicInfoAuthorizer struct{}

var publicPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true, "/version/": true}

func (PublicInfoAuthorizer) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if !a.IsResource && a.Verb == "get" && publicPaths[a.Path] {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

// AlwaysAllowAuthorizer allows every request (upstream's
// --authorization-mode=AlwaysAllow, for tests).
type AlwaysAllowAuthorizer struct{}

func (AlwaysAllowAuthorizer) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
}

// Chain asks each authorizer in turn; the first Allow or Deny decides.
type Chain []Authorizer

func (c Chain) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons string
	for _, x := range c {
		d, reason, err := x.Authorize(ctx, a)
		if err != nil || d != NoOpinion {
			return d, reason, err
		}
		if reason != "" {
			reasons = reason
		}
	}
	return NoOpinion, reasons, nil
}
