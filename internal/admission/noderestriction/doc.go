// Package noderestriction is the admission step that keeps pod creates by
// node agents and of mirror pods within their bounds: a node identity may
// create only its own mirror pods (upstream's NodeRestriction rule), and
// no mirror pod may refer to service accounts, secrets or token
// projections (upstream's ServiceAccount rule for mirror pods, enforced
// whether or not the default plugins are on). The rules themselves are
// the pods registry's (internal/registry/core).
package noderestriction
