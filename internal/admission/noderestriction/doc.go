// Package noderestriction is upstream's NodeRestriction admission plugin:
// it keeps what a node identity (system:node:<name> in system:nodes)
// writes to its own objects — its Node (not labels outside the kubelet's
// set nor taints), its Lease and CSINode, mirror pods bound to itself, its
// own pods' status, evictions and deletes, tokens bound to its own pods —
// where the Node authorizer (internal/auth/node), which sees only the
// request and not the objects, allows the verb. It also keeps every
// mirror pod clear of service accounts, secrets and token projections
// (upstream's ServiceAccount rule for mirror pods, enforced whether or not
// the default plugins are on); the mirror pod rules are the pods
// registry's (internal/registry/core).
package noderestriction
